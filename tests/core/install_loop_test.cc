// The install loop of cmds 0 and 2 (core/pagetable.h, install_entry): a round
// lost to a hardware A/D update goes round again and is counted
// (Hypervisor::install_retries, docs/design.md §7's cmpxchg retries, which the mprotect
// benchmark reports); a change other than A/D is refused and not counted.
#include "core/pagetable.h"
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

using InstallLoopTest = CoreTest;

constexpr uint64_t kOld = 0x0000'0000'0123'4000ull | pte_bit::P | pte_bit::RW | pte_bit::US;
constexpr uint64_t kNew = kOld & ~pte_bit::RW;

TEST_F(InstallLoopTest, DirtyBitSetSinceTheReadIsKeptAndTheLostRoundCounted)
{
    uint64_t slot = kOld | pte_bit::D;   // hardware set D after the caller read kOld
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<AdRule::Fold>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew | pte_bit::D);
    EXPECT_EQ(old, kOld | pte_bit::D);
    EXPECT_EQ(hv().install_retries() - before, 1u);
}

// cmd 2 leaving the entry non-present: the old mapping's
// A/D at the install, exactly — not the new value's own bits 5 and 6.
TEST_F(InstallLoopTest, HandBackLeavesExactlyTheOldMappingsAdInTheClearedEntry)
{
    constexpr uint64_t kSwap = 0x0000'0000'0567'8000ull | pte_bit::D;   // not present
    uint64_t slot = kOld | pte_bit::A;   // hardware set A after the caller read kOld
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<AdRule::HandBack>(hv(), &slot, old, kSwap), 0);
    EXPECT_EQ(slot, (kSwap & ~pte_bit::AD) | pte_bit::A);
    EXPECT_EQ(old, kOld | pte_bit::A);
    EXPECT_EQ(hv().install_retries() - before, 1u);
}

TEST_F(InstallLoopTest, Cmd2RuleFoldsOnlyIntoTheSameFrameAndHandsBackOnlyFromAMapping)
{
    const Pte mapped{kOld}, other{kOld + kPageSize}, swap{0x5000 | pte_bit::D};
    EXPECT_EQ(atomic_rule(mapped, Pte{kNew}), AdRule::Fold);
    EXPECT_EQ(atomic_rule(mapped, other), AdRule::Overwrite);
    EXPECT_EQ(atomic_rule(mapped, swap), AdRule::HandBack);
    EXPECT_EQ(atomic_rule(mapped, Pte{0}), AdRule::HandBack);
    EXPECT_EQ(atomic_rule(swap, mapped), AdRule::Overwrite);
    EXPECT_EQ(atomic_rule(swap, Pte{0}), AdRule::Overwrite);
}

TEST_F(InstallLoopTest, NormalUpdateOverwritesTheBitButCountsTheRoundToo)
{
    uint64_t slot = kOld | pte_bit::A;
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<AdRule::Overwrite>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew);
    EXPECT_EQ(hv().install_retries() - before, 1u);
}

TEST_F(InstallLoopTest, UnchangedEntryInstallsAtOnceWithoutARetry)
{
    uint64_t slot = kOld;
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<AdRule::Fold>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew);
    EXPECT_EQ(hv().install_retries(), before);
}

TEST_F(InstallLoopTest, ChangeOtherThanAccessedDirtyIsRefusedAndNotCounted)
{
    uint64_t slot = kOld ^ pte_bit::NX;   // a software writer, not hardware
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<AdRule::Fold>(hv(), &slot, old, kNew), -XEN_EBUSY);
    EXPECT_EQ(slot, kOld ^ pte_bit::NX);
    EXPECT_EQ(hv().install_retries(), before);
}

} // namespace
} // namespace pvmmu::test
