// The image fuzzer's harness (fuzz/image_harness.h) built with g++ (and under
// ASan with the unit label): its seeds in fuzz/image_corpus and a guest
// kernel of this tree replay with every invariant checked, and each is placed
// where it should be.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "image_harness.h"

namespace pvmmu::fuzz {
namespace {

std::vector<uint8_t> read(const std::filesystem::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ImageOutcome replay(const std::filesystem::path& p)
{
    const std::vector<uint8_t> b = read(p);
    return run_image_input(b.data(), b.size());
}

// Domain sizes (of image_harness.cc's 64, 1024 and 16384 frames) that take
// each seed: Linux's layout needs more than 16 MiB.
TEST(ImageFuzzReplay, EverySeedKeepsTheInvariantsAndIsPlacedWhereItFits)
{
    const std::filesystem::path dir = std::filesystem::path(PVMMU_FUZZ_DIR) / "image_corpus";
    const std::pair<const char*, unsigned> expect[] = {
        {"seed-linux-notes", 1}, {"seed-pvmmu-notes", 2}, {"seed-pvmmu-notes-4-byte", 0},   // 4-byte VIRT_BASE: 0
        {"seed-every-note", 0},  {"seed-legacy-xen-guest", 2}, {"seed-linked-at-zero", 3},
        {"seed-bzimage-elf", 2}, {"seed-bzimage-xz", 1}};
    unsigned seen = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        const ImageOutcome o = replay(e.path());
        EXPECT_TRUE(o.ok) << e.path().filename() << ": " << o.failure;
        for (const auto& [name, accepted] : expect)
            if (e.path().filename() == name) {
                EXPECT_EQ(o.accepted, accepted) << name;
                ++seen;
            }
    }
    EXPECT_EQ(seen, std::size(expect));
}

TEST(ImageFuzzReplay, AGuestKernelOfThisTreeIsPlacedInTheLargerDomains)
{
    const ImageOutcome o = replay(PVMMU_GUEST_KERNEL);
    EXPECT_TRUE(o.ok) << o.failure;
    EXPECT_EQ(o.accepted, 2u);
}

// The harness sees the bug this fuzzer was written for: a hypercall page
// note of 0xfffffffffffff000 in a pvmmu seed is refused, not placed.
TEST(ImageFuzzReplay, AWrappingHypercallPageSeedIsRefused)
{
    std::vector<uint8_t> b = read(std::filesystem::path(PVMMU_FUZZ_DIR) / "image_corpus" / "seed-pvmmu-notes");
    // The second note (HYPERCALL_PAGE): ELF header, 3 program headers, the
    // first note (24 bytes), then its header and name (16 bytes).
    const uint64_t wrap = 0xfffffffffffff000;
    ASSERT_GT(b.size(), 64u + 3 * 56 + 24 + 16 + 8);
    std::memcpy(b.data() + 64 + 3 * 56 + 24 + 16, &wrap, 8);
    const ImageOutcome o = run_image_input(b.data(), b.size());
    EXPECT_TRUE(o.ok) << o.failure;
    EXPECT_EQ(o.accepted, 0u);
}

} // namespace
} // namespace pvmmu::fuzz
