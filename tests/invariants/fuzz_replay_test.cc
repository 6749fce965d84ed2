// The fuzz harness (fuzz/harness.cc) as a unit test: the corpus and every saved
// regression replay with no broken invariant and no refused request that changed
// the state; and the harness is shown to catch both kinds of failure when they
// are injected (docs/design.md §9: a detector shown to catch the bug it looks for).
#include <gtest/gtest.h>

#include "fuzz/harness.h"
#include "invariants/fuzz_inputs.h"

namespace pvmmu::test {
namespace {

using fuzz::Options;
using fuzz::Outcome;
using fuzz::run_input;

Outcome replay(const std::vector<uint8_t>& b, Options opt = {}) { return run_input(b.data(), b.size(), opt); }

TEST(FuzzReplay, SeedsReachEveryHypercallAndKeepEveryInvariant)
{
    const std::vector<FuzzInput> seeds = fuzz_inputs("corpus");
    ASSERT_GE(seeds.size(), 8u) << "fuzz/corpus/ lost its seeds (python3 fuzz/make_seeds.py)";
    uint64_t calls = 0, refused = 0;
    for (const FuzzInput& in : seeds) {
        const Outcome o = replay(in.bytes);
        EXPECT_TRUE(o.ok) << in.name << ": " << o.failure;
        calls += o.calls;
        refused += o.refused_checked;
    }
    EXPECT_GT(calls, 60u);
    EXPECT_GT(refused, 15u);
}

TEST(FuzzReplay, SeedsKeepEveryInvariantUnderStrictCompare)
{
    Options strict;
    strict.strict = true;
    for (const FuzzInput& in : fuzz_inputs("corpus")) {
        const Outcome o = replay(in.bytes, strict);
        EXPECT_TRUE(o.ok) << in.name << ": " << o.failure;
    }
}

TEST(FuzzReplay, RegressionsKeepEveryInvariant)
{
    for (const FuzzInput& in : fuzz_inputs("regressions")) {
        const Outcome o = replay(in.bytes);
        EXPECT_TRUE(o.ok) << in.name << ": " << o.failure;
    }
}

TEST(FuzzReplay, AnyByteStringIsAValidProgram)
{
    // Deterministic pseudo-random inputs of every length up to 512 bytes.
    uint64_t x = 0x243f6a8885a308d3ull;
    for (size_t len = 0; len <= 512; len += 3) {
        std::vector<uint8_t> b(len);
        for (uint8_t& c : b) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            c = uint8_t(x);
        }
        const Outcome o = replay(b);
        EXPECT_TRUE(o.ok) << "length " << len << ": " << o.failure;
    }
}

// --- the harness catches what it looks for ------------------------------------------

TEST(FuzzReplay, HarnessCatchesACountBumpedBehindTheCoresBack)
{
    Options opt;
    opt.inject = fuzz::Inject::BumpCountAfterFirstCall;
    const std::vector<uint8_t> xen_version = {0, 6, 0, 1, 0, 4};   // config, op 6: XENVER_version
    const Outcome o = replay(xen_version, opt);
    EXPECT_FALSE(o.ok);
    EXPECT_NE(o.failure.find("general count differs"), std::string::npos) << o.failure;
}

TEST(FuzzReplay, HarnessCatchesARefusedRequestThatChangedTheState)
{
    Options opt;
    opt.inject = fuzz::Inject::WriteAfterRefusedRequest;
    // config 0; op 0: one mmu_update, command 5 (-ENOSYS), ptr to gpfn 7's entry,
    // val 0, a good pdone, DOMID_SELF.
    const std::vector<uint8_t> enosys = {0, 0, 9, 5, 3, 7, 0, 4, 0};
    const Outcome o = replay(enosys, opt);
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.refused_checked, 1u);
    EXPECT_NE(o.failure.find("refused request (rc -38) changed the state"), std::string::npos) << o.failure;
}

} // namespace
} // namespace pvmmu::test
