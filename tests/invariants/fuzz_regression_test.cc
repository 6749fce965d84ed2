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

// Found in the first seconds of fuzzing; a harness bug, not a core one: a
// single mmu_update whose request succeeded but whose pdone pointer was bad
// returned -EFAULT (as documented: docs/abi.md §3), and the harness took that
// for a refusal that had changed the state. The harness now counts a call as
// refused only when pdone is NULL or writable.
TEST(FuzzRegression, SuccessfulRequestWithAnUnwritablePdoneIsNoRefusal)
{
    const fuzz::Outcome o = replay_regression("harness-pdone-efault-after-the-request-ran");
    EXPECT_TRUE(o.ok) << o.failure;
    EXPECT_GE(o.calls, 4u);
}

} // namespace
} // namespace pvmmu::test
