// The fuzz corpus replayed while a second thread sets A/D bits in the live page
// tables (fuzz/ad_walker.h), as hardware does: every invariant holds after every
// round, and refused requests change nothing but A/D bits. Labelled concurrency,
// so ./pvmmu test also runs it under TSan.
#include <gtest/gtest.h>

#include "fuzz/harness.h"
#include "invariants/fuzz_inputs.h"

namespace pvmmu::test {
namespace {

TEST(FuzzReplayConcurrentAd, CorpusKeepsEveryInvariantWhileHardwareSetsAd)
{
    fuzz::Options opt;
    opt.concurrent_ad = true;
    std::vector<FuzzInput> inputs = fuzz_inputs("corpus");
    for (FuzzInput& r : fuzz_inputs("regressions")) inputs.push_back(std::move(r));
    ASSERT_FALSE(inputs.empty());
    uint64_t bits = 0;
    for (int round = 0; round < 5; ++round)
        for (const FuzzInput& in : inputs) {
            const fuzz::Outcome o = fuzz::run_input(in.bytes.data(), in.bytes.size(), opt);
            EXPECT_TRUE(o.ok) << in.name << ": " << o.failure;
            bits += o.ad_bits;
        }
    // The walker really raced the hypercalls (it runs from the first call on).
    EXPECT_GT(bits, 0u);
}

} // namespace
} // namespace pvmmu::test
