// core/callback_rules.h: the addresses set_trap_table, set_callbacks and
// stack_switch take, at the ends of the guest's two parts of the address space.
#include <gtest/gtest.h>

#include "core/callback_rules.h"

namespace pvmmu {
namespace {

constexpr uint64_t kHvSlot = 0xffff800000000000;   // the first reserved L4 slot

TEST(CallbackRules, ATrapEntryWithoutHandlerIsTakenWhateverElseItSays)
{
    trap_info_t t{};
    t.vector = 14;
    t.flags = 3;
    EXPECT_TRUE(trap_entry_ok(t));
    t.address = kHvSlot;
    EXPECT_FALSE(trap_entry_ok(t));
    t.address = kGuestUpperStart;
    EXPECT_TRUE(trap_entry_ok(t));
    t.address = kGuestLowerEnd;
    EXPECT_FALSE(trap_entry_ok(t));
}

TEST(CallbackRules, EachOfTheThreeCallbacksMustBeAGuestAddress)
{
    const uint64_t ok = kGuestUpperStart, bad = kGuestUpperStart - 1;
    EXPECT_TRUE(callbacks_ok(ok, ok, ok));
    EXPECT_TRUE(callbacks_ok(0, 0, 0));   // address 0 is the guest's own, taken as Xen does
    EXPECT_FALSE(callbacks_ok(bad, ok, ok));
    EXPECT_FALSE(callbacks_ok(ok, bad, ok));
    EXPECT_FALSE(callbacks_ok(ok, ok, bad));
}

TEST(CallbackRules, AKernelStackInTheHypervisorsSlotsIsRefused)
{
    EXPECT_TRUE(kernel_stack_ok(kGuestLowerEnd - 8));
    EXPECT_FALSE(kernel_stack_ok(kGuestLowerEnd));
    EXPECT_FALSE(kernel_stack_ok(kHvSlot + 0x1000));
    EXPECT_TRUE(kernel_stack_ok(~0ull - 7));
}

} // namespace
} // namespace pvmmu
