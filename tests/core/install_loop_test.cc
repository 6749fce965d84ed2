// The install loop of cmds 0 and 2 (core/pagetable.h, install_entry): a round
// lost to a hardware A/D update goes round again and is counted
// (Hypervisor::install_retries, SPEC §7's cmpxchg retries, which the mprotect
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
    EXPECT_EQ(install_entry<true>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew | pte_bit::D);
    EXPECT_EQ(old, kOld | pte_bit::D);
    EXPECT_EQ(hv().install_retries() - before, 1u);
}

TEST_F(InstallLoopTest, NormalUpdateOverwritesTheBitButCountsTheRoundToo)
{
    uint64_t slot = kOld | pte_bit::A;
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<false>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew);
    EXPECT_EQ(hv().install_retries() - before, 1u);
}

TEST_F(InstallLoopTest, UnchangedEntryInstallsAtOnceWithoutARetry)
{
    uint64_t slot = kOld;
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<true>(hv(), &slot, old, kNew), 0);
    EXPECT_EQ(slot, kNew);
    EXPECT_EQ(hv().install_retries(), before);
}

TEST_F(InstallLoopTest, ChangeOtherThanAccessedDirtyIsRefusedAndNotCounted)
{
    uint64_t slot = kOld ^ pte_bit::NX;   // a software writer, not hardware
    uint64_t old = kOld;
    const uint64_t before = hv().install_retries();
    EXPECT_EQ(install_entry<true>(hv(), &slot, old, kNew), -XEN_EBUSY);
    EXPECT_EQ(slot, kOld ^ pte_bit::NX);
    EXPECT_EQ(hv().install_retries(), before);
}

} // namespace
} // namespace pvmmu::test
