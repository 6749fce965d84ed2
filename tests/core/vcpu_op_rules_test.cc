// vcpu_op's argument rules (core/vcpu_op_rules.h), as Xen 4.17 answers them
// and as docs/abi.md §10 "vcpu_op" lists pvmmu's differences.
#include <gtest/gtest.h>

#include "core/vcpu_op_rules.h"

namespace pvmmu::test {
namespace {

constexpr uint64_t kKernelVa = 0xffffffff81000000, kUserVa = 0x400000;
constexpr uint64_t kHypervisorVa = 0xffff830000000000;   // in the reserved slots 256..271
constexpr uint64_t kNonCanonical = 0x0000900000000000;
constexpr uint64_t kFrames = 64;   // frames the fake machine has: 0 .. 63

bool frame_ok(Mfn m) { return m.v < kFrames; }

// A context every check takes: kernel mode, no user L4, no kernel stack.
VcpuContextArgs good()
{
    VcpuContextArgs c;
    c.rip = kKernelVa, c.rsp = kKernelVa + 0x1000;
    c.event = kKernelVa + 0x100, c.failsafe = kKernelVa + 0x200, c.syscall = kKernelVa + 0x300;
    c.cr3 = xen_pfn_to_cr3(5);
    c.flags = VGCF_in_kernel;
    return c;
}

long check(const VcpuContextArgs& c) { return vcpu_context_check(c, frame_ok); }

TEST(VcpuOpRules, AVcpuTheDomainDoesNotHaveIsNoEntry)
{
    EXPECT_EQ(vcpu_op_target_check(2, 2), -XEN_ENOENT);
    EXPECT_EQ(vcpu_op_target_check(~0u, 2), -XEN_ENOENT);
    EXPECT_EQ(vcpu_op_target_check(0, 0), -XEN_ENOENT);
    EXPECT_EQ(vcpu_op_target_check(1, 2), 0);
    EXPECT_EQ(vcpu_op_target_check(0, 1), 0);
}

TEST(VcpuOpRules, InitialiseOfAnUpVcpuExistsAndOfABusyOneIsBusy)
{
    EXPECT_EQ(vcpu_initialise_check(VcpuState::Up), -XEN_EEXIST);
    EXPECT_EQ(vcpu_initialise_check(VcpuState::Busy), -XEN_EBUSY);
    EXPECT_EQ(vcpu_initialise_check(VcpuState::Down), 0);
    EXPECT_EQ(vcpu_initialise_check(VcpuState::Initialised), 0);
}

TEST(VcpuOpRules, AFailedInitialiseLeavesTheVcpuDown)
{
    EXPECT_EQ(vcpu_initialised_state(-XEN_EINVAL), VcpuState::Down);
    EXPECT_EQ(vcpu_initialised_state(-XEN_EFAULT), VcpuState::Down);
    EXPECT_EQ(vcpu_initialised_state(0), VcpuState::Initialised);
}

TEST(VcpuOpRules, UpBeforeInitialiseOrWhileOneRunsIsInvalid)
{
    EXPECT_EQ(vcpu_up_check(VcpuState::Down), -XEN_EINVAL);
    EXPECT_EQ(vcpu_up_check(VcpuState::Busy), -XEN_EINVAL);
    EXPECT_FALSE(vcpu_up_starts(VcpuState::Down));
    EXPECT_FALSE(vcpu_up_starts(VcpuState::Busy));
}

TEST(VcpuOpRules, UpOfAnInitialisedVcpuStartsItAndOfAnUpOneDoesNothing)
{
    EXPECT_EQ(vcpu_up_check(VcpuState::Initialised), 0);
    EXPECT_TRUE(vcpu_up_starts(VcpuState::Initialised));
    EXPECT_EQ(vcpu_up_check(VcpuState::Up), 0);
    EXPECT_FALSE(vcpu_up_starts(VcpuState::Up));
}

TEST(VcpuOpRules, DownOfAnotherVcpuIsInvalid)
{
    EXPECT_EQ(vcpu_down_check(false), -XEN_EINVAL);
    EXPECT_EQ(vcpu_down_check(true), 0);
}

TEST(VcpuOpRules, IsUpIsOneOnlyForAnUpVcpu)
{
    EXPECT_EQ(vcpu_is_up(VcpuState::Up), 1);
    EXPECT_EQ(vcpu_is_up(VcpuState::Down), 0);
    EXPECT_EQ(vcpu_is_up(VcpuState::Initialised), 0);
    EXPECT_EQ(vcpu_is_up(VcpuState::Busy), 0);
}

TEST(VcpuOpRules, ContextWithAHypervisorOrNonCanonicalAddressIsInvalid)
{
    for (uint64_t bad : {kHypervisorVa, kNonCanonical, kGuestLowerEnd, uint64_t(kGuestUpperStart - 1)}) {
        SCOPED_TRACE(bad);
        for (int field = 0; field < 8; ++field) {
            VcpuContextArgs c = good();
            uint64_t* f[] = {&c.rip, &c.rsp, &c.base[0], &c.base[1], &c.base[2], &c.event, &c.failsafe, &c.syscall};
            *f[field] = bad;
            EXPECT_EQ(check(c), -XEN_EINVAL) << "field " << field;
        }
        VcpuContextArgs c = good();
        c.kernel_ss = 0xe02b, c.kernel_sp = bad;
        EXPECT_EQ(check(c), -XEN_EINVAL) << "kernel_sp";
    }
}

TEST(VcpuOpRules, ContextAddressesAtTheEndsOfTheGuestsPartsAreTaken)
{
    for (uint64_t ok : {uint64_t(0), kUserVa, kGuestLowerEnd - 1, kGuestUpperStart, uint64_t(~0ull)}) {
        VcpuContextArgs c = good();
        c.rip = c.rsp = c.base[0] = c.base[1] = c.base[2] = c.event = c.failsafe = c.syscall = ok;
        c.kernel_ss = 0xe02b, c.kernel_sp = ok;
        EXPECT_EQ(check(c), 0) << ok;
    }
}

TEST(VcpuOpRules, NoKernelStackIsBothWordsZeroOnly)
{
    VcpuContextArgs c = good();
    EXPECT_TRUE(vcpu_context_no_stack(c));
    c.kernel_sp = kHypervisorVa;   // a stack pointer with ss 0 is a stack, and checked
    EXPECT_FALSE(vcpu_context_no_stack(c));
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c = good();
    c.kernel_ss = 0xe02b;           // an ss with sp 0: a stack at 0, a guest address
    EXPECT_FALSE(vcpu_context_no_stack(c));
    EXPECT_EQ(check(c), 0);
}

TEST(VcpuOpRules, ContextCr3MustBeAnAlignedFrameOfTheMachine)
{
    VcpuContextArgs c = good();
    c.cr3 = xen_pfn_to_cr3(5) | 8;
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.cr3 = xen_pfn_to_cr3(kFrames);
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.cr3 = xen_pfn_to_cr3(kFrames - 1);
    EXPECT_EQ(check(c), 0);
    c.cr3 = 0;   // frame 0 is a frame like any other here; its type is checked later
    EXPECT_EQ(check(c), 0);
}

TEST(VcpuOpRules, ContextUserL4IfAnyMustBeAnAlignedFrameOfTheMachine)
{
    VcpuContextArgs c = good();
    c.cr1 = xen_pfn_to_cr3(7) | 0x800;
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.cr1 = xen_pfn_to_cr3(kFrames + 3);
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.cr1 = xen_pfn_to_cr3(7);
    EXPECT_EQ(check(c), 0);
}

TEST(VcpuOpRules, StartingInUserModeNeedsAUserL4)
{
    VcpuContextArgs c = good();
    c.flags = 0;
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.flags = VGCF_failsafe_disables_events | VGCF_syscall_disables_events;
    EXPECT_EQ(check(c), -XEN_EINVAL);
    c.cr1 = xen_pfn_to_cr3(7);
    EXPECT_EQ(check(c), 0);
}

TEST(VcpuOpRules, ContextGdtEntriesStopBelowXensReservedOnesOnAllSixtyFourBits)
{
    EXPECT_EQ(vcpu_context_gdt_check(0), 0);
    EXPECT_EQ(vcpu_context_gdt_check(FIRST_RESERVED_GDT_ENTRY), 0);
    EXPECT_EQ(vcpu_context_gdt_check(FIRST_RESERVED_GDT_ENTRY + 1), -XEN_EINVAL);
    EXPECT_EQ(vcpu_context_gdt_check((1ull << 32) + 1), -XEN_EINVAL);   // 1 in the low half
    EXPECT_EQ(vcpu_context_gdt_check(~0ull), -XEN_EINVAL);
}

} // namespace
} // namespace pvmmu::test
