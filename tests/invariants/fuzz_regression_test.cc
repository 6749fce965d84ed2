// Every input the fuzzer once failed on, kept in fuzz/regressions/ and replayed
// here by name, with what it found. (FuzzReplay.RegressionsKeepEveryInvariant
// replays the whole folder too, so a file without a test here still runs.)
#include <gtest/gtest.h>

#include "fuzz/harness.h"
#include "invariants/fuzz_inputs.h"

namespace pvmmu::test {
namespace {

fuzz::Outcome replay_regression(const char* name)
{
    const std::vector<uint8_t> b =
        read_bytes(std::filesystem::path(PVMMU_FUZZ_DIR) / "regressions" / name);
    EXPECT_FALSE(b.empty()) << "fuzz/regressions/" << name << " is missing";
    return fuzz::run_input(b.data(), b.size(), fuzz::Options{});
}

// A harness bug, not a core one: a single mmu_update whose request succeeds
// but whose pdone pointer is bad returns -EFAULT (as documented: docs/abi.md
// §3), which is no refusal: the request changed the state. The harness counts
// a call as refused only when pdone is NULL or writable.
TEST(FuzzRegression, SuccessfulRequestWithAnUnwritablePdoneIsNoRefusal)
{
    const fuzz::Outcome o = replay_regression("harness-pdone-efault-after-the-request-ran");
    EXPECT_TRUE(o.ok) << o.failure;
    EXPECT_GE(o.calls, 4u);
}

} // namespace
} // namespace pvmmu::test
