// pvmmu-run's bzImage unpacker built without liblzma (tools/bzimage_xz_missing.cc,
// what CMake picks when liblzma-dev is missing): an XZ payload is refused
// saying so; an uncompressed ELF payload still unpacks.
#include "bzimage.h"

#include <algorithm>
#include <cstring>

#include <gtest/gtest.h>

namespace pvmmu::run {
namespace {

// The most unpacked in these tests: a domain of 64 MiB.
constexpr size_t kCap = size_t(64) << 20;

// setup_sects 3, the payload 0x40 bytes into the protected-mode part (as
// bzimage_test.cc builds them).
std::vector<uint8_t> bzimage(const std::vector<uint8_t>& payload)
{
    std::vector<uint8_t> f(0x840 + payload.size(), 0);
    std::copy(payload.begin(), payload.end(), f.begin() + 0x840);
    f[0x1f1] = 3;
    std::memcpy(&f[0x202], "HdrS", 4);
    f[0x206] = 0x0f, f[0x207] = 0x02;
    f[0x248] = 0x40;
    const uint32_t n = uint32_t(payload.size());
    for (int i = 0; i < 4; ++i) f[0x24c + i] = uint8_t(n >> (8 * i));
    return f;
}

TEST(BzImageWithoutLzma, AnXzPayloadIsRefusedSayingSo)
{
    std::vector<uint8_t> xz = {0xfd, '7', 'z', 'X', 'Z', 0}, out;
    xz.resize(256, 0x55);
    std::string why;
    EXPECT_EQ(bzimage_unpack(bzimage(xz), out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("built without liblzma"), std::string::npos) << why;
    EXPECT_TRUE(out.empty());
}

TEST(BzImageWithoutLzma, AnUncompressedElfPayloadStillUnpacks)
{
    std::vector<uint8_t> elf = {0x7f, 'E', 'L', 'F'}, out;
    elf.resize(4096, 7);
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(elf), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
}

} // namespace
} // namespace pvmmu::run
