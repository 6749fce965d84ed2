// A PV guest's debug registers by Xen 4.17's rules (pv/dr.h,
// docs/abi.md §12), compiled for the host: which registers exist, which
// values are refused with which errno (and change nothing), the bits forced,
// DR4/DR5 and CR4.DE, I/O breakpoints, and how a #DB's DR6 is folded in.
#include <gtest/gtest.h>

#include <pvmmu/abi.h>

#include "pv/dr.h"

namespace pvmmu::x86 {
namespace {

constexpr DrPolicy kNoDe{};
constexpr DrPolicy kDe{true, false, false};

bool same(const DebugRegs& a, const DebugRegs& b)
{
    return a.dr[0] == b.dr[0] && a.dr[1] == b.dr[1] && a.dr[2] == b.dr[2] && a.dr[3] == b.dr[3] &&
           a.dr6 == b.dr6 && a.dr7 == b.dr7 && a.dr7_io == b.dr7_io;
}

TEST(DebugRegs, RefusedValuesChangeNothing)
{
    DebugRegs r;
    const DebugRegs before = r;
    EXPECT_EQ(dr_write(r, 0, 0xffff800000000000, kNoDe), -XEN_EPERM);   // the hypervisor's slots
    EXPECT_EQ(dr_write(r, 1, 0xffff87fffffffff8, kNoDe), -XEN_EPERM);
    EXPECT_EQ(dr_write(r, 2, 0x0000800000000000, kNoDe), -XEN_EPERM);   // non-canonical
    EXPECT_EQ(dr_write(r, 3, 0x8000000000000000, kNoDe), -XEN_EPERM);
    EXPECT_EQ(dr_write(r, 6, 1ull << 32, kNoDe), -XEN_EINVAL);          // DR6 and DR7 are 32 bits
    EXPECT_EQ(dr_write(r, 7, 1ull << 32, kNoDe), -XEN_EINVAL);
    EXPECT_EQ(dr_write(r, 7, 0x00020001, kNoDe), -XEN_EPERM);           // an I/O breakpoint without CR4.DE
    EXPECT_EQ(dr_write(r, 8, 0, kNoDe), -XEN_ENODEV);
    EXPECT_EQ(dr_write(r, ~0u, 0, kNoDe), -XEN_ENODEV);
    EXPECT_EQ(dr_write(r, 4, 0, kDe), -XEN_ENODEV);                     // DR4/DR5 gone with CR4.DE
    EXPECT_EQ(dr_write(r, 5, 0, kDe), -XEN_ENODEV);
    EXPECT_TRUE(same(r, before));
}

TEST(DebugRegs, AddressesOfTheGuestAreTaken)
{
    DebugRegs r;
    EXPECT_EQ(dr_write(r, 0, 0x00007ffffffffff8, kNoDe), 0);
    EXPECT_EQ(dr_write(r, 3, 0xffff880000000000, kNoDe), 0);   // the first guest slot above the hypervisor
    EXPECT_EQ(dr_write(r, 1, ~0ull, kNoDe), 0);
    uint64_t v = 0;
    EXPECT_EQ(dr_read(r, 0, kNoDe, v), 0);
    EXPECT_EQ(v, 0x00007ffffffffff8u);
    EXPECT_EQ(dr_read(r, 3, kNoDe, v), 0);
    EXPECT_EQ(v, 0xffff880000000000u);
}

TEST(DebugRegs, FixedBitsAreForced)
{
    DebugRegs r;
    EXPECT_EQ(dr_write(r, 6, 0, kNoDe), 0);
    EXPECT_EQ(r.dr6, kDr6Default);
    EXPECT_EQ(dr_write(r, 6, 0xffffffff, kNoDe), 0);
    EXPECT_EQ(r.dr6, 0xffffefffu);   // bit 12 reads 0
    EXPECT_EQ(dr_write(r, 6, 0, DrPolicy{false, true, true}), 0);
    EXPECT_EQ(r.dr6, kDr6Default & ~kDr6Rtm & ~kDr6Bld);   // active-low bits of RTM and BLD
    EXPECT_EQ(dr_write(r, 7, 0, kNoDe), 0);
    EXPECT_EQ(r.dr7, kDr7Default);
    // General detect is refused, as Xen refuses it, and nothing changes.
    EXPECT_EQ(dr_write(r, 7, kDr7Gd, kNoDe), -XEN_EPERM);
    EXPECT_EQ(r.dr7, kDr7Default);
    EXPECT_EQ(dr_write(r, 7, 0xffffffff & ~0x00aa0000u & ~kDr7Gd, kNoDe), 0);   // every bit but I/O RWs and GD
    EXPECT_EQ(r.dr7, 0xff5507ffu);   // 11, 12, 14, 15 clear (no RTM)
    EXPECT_EQ(dr7_for_cpu(r), 0xff5507ffu);
    EXPECT_EQ(dr_write(r, 7, 1u << 11, DrPolicy{false, true, false}), 0);
    EXPECT_EQ(r.dr7, kDr7Default | kDr7Rtm);
}

TEST(DebugRegs, Dr4AndDr5AliasDr6AndDr7WithoutDe)
{
    DebugRegs r;
    EXPECT_EQ(dr_write(r, 4, 0x1, kNoDe), 0);
    EXPECT_EQ(r.dr6, kDr6Default | 1);
    EXPECT_EQ(dr_write(r, 5, 0x3, kNoDe), 0);
    EXPECT_EQ(r.dr7, kDr7Default | 3);
    uint64_t v = 0;
    EXPECT_EQ(dr_read(r, 5, kNoDe, v), 0);
    EXPECT_EQ(v, kDr7Default | 3);
    EXPECT_EQ(dr_read(r, 4, kDe, v), -XEN_ENODEV);
    EXPECT_EQ(dr_read(r, 8, kNoDe, v), -XEN_ENODEV);
}

TEST(DebugRegs, IoBreakpointsNeedDeAndAreEmulated)
{
    DebugRegs r;
    // Breakpoint 1: I/O (RW 10), 2 bytes (LEN 01), enabled (L1), at port 0x3f8.
    const uint32_t dr7 = (2u << 20) | (1u << 22) | (1u << 2);
    EXPECT_EQ(dr_write(r, 7, dr7, kNoDe), -XEN_EPERM);
    EXPECT_EQ(dr_write(r, 7, dr7 & ~4u, kNoDe), 0);   // nothing enabled: not looked at
    // Breakpoint 0 enabled: an I/O RW anywhere needs CR4.DE, enabled or not.
    EXPECT_EQ(dr_write(r, 7, (dr7 & ~4u) | 1u, kNoDe), -XEN_EPERM);
    EXPECT_EQ(dr_write(r, 1, 0x3f8, kDe), 0);
    EXPECT_EQ(dr_write(r, 7, dr7, kDe), 0);
    EXPECT_EQ(r.dr7_io, 4u);
    EXPECT_EQ(dr7_for_cpu(r) & kDr7Enables, 0u);   // the CPU never gets it
    uint64_t v = 0;
    EXPECT_EQ(dr_read(r, 7, kDe, v), 0);
    EXPECT_EQ(v, kDr7Default | dr7);   // get_debugreg shows it
    EXPECT_EQ(io_breakpoints(r, 0x3f8, 1), 2u);
    EXPECT_EQ(io_breakpoints(r, 0x3f9, 1), 2u);
    EXPECT_EQ(io_breakpoints(r, 0x3f6, 4), 2u);
    EXPECT_EQ(io_breakpoints(r, 0x3fa, 1), 0u);
    EXPECT_EQ(io_breakpoints(r, 0x3f4, 4), 0u);
    EXPECT_EQ(dr_write(r, 7, 0, kDe), 0);
    EXPECT_EQ(r.dr7_io, 0u);
    EXPECT_EQ(io_breakpoints(r, 0x3f8, 1), 0u);
}

TEST(DebugRegs, Dr6MergeAccumulatesHitsAndClearsActiveLowBits)
{
    DebugRegs r;
    dr6_merge(r, kDr6Default | 1);
    EXPECT_EQ(r.dr6, kDr6Default | 1);
    dr6_merge(r, kDr6Default | kDr6Bs);
    EXPECT_EQ(r.dr6, kDr6Default | 1 | kDr6Bs);   // sticky until the guest clears it
    dr6_merge(r, kDr6Default & ~kDr6Rtm);
    EXPECT_EQ(r.dr6, (kDr6Default & ~kDr6Rtm) | 1 | kDr6Bs);
}

TEST(DebugRegs, EmulatedHitsAreRecordedWithTheReservedBits)
{
    DebugRegs r;
    r.dr6 = 0;   // a guest that cleared its DR6 with MOV
    dr6_record_emulated(r, 2);
    EXPECT_EQ(r.dr6, kDr6Default | 2);
    dr6_record_emulated(r, kDr6Bs);
    EXPECT_EQ(r.dr6, kDr6Default | 2 | kDr6Bs);   // accumulates
}

// DR7 enables (L/G n in bits 2n, 2n+1) and RW n (bits 16 + 4n): 01 data write, 11 data access.
constexpr uint32_t enable(unsigned n) { return 1u << (2 * n); }
constexpr uint32_t rw(unsigned n, uint32_t v) { return v << (kDr7RwShift + 4 * n); }

TEST(DebugRegs, ARing0DebugTrapIsTheGuestsOnlyForAnEnabledDataBreakpointsHit)
{
    const uint32_t dr7 = enable(1) | rw(1, 1) | enable(2) | rw(2, 3) | enable(3) | rw(3, 0);
    EXPECT_TRUE(dr_hit_is_guest_data(dr7, kDr6Default | 2));    // breakpoint 1, data write
    EXPECT_TRUE(dr_hit_is_guest_data(dr7, kDr6Default | 4));    // breakpoint 2, data access
    EXPECT_TRUE(dr_hit_is_guest_data(dr7, kDr6Default | 3));    // with a disabled one's condition
    EXPECT_FALSE(dr_hit_is_guest_data(dr7, kDr6Default | 8));   // breakpoint 3 is an instruction one
    EXPECT_FALSE(dr_hit_is_guest_data(dr7, kDr6Default | 1));   // breakpoint 0 is not enabled
    EXPECT_FALSE(dr_hit_is_guest_data(rw(0, 1), kDr6Default | 1));   // RW set, not enabled
}

TEST(DebugRegs, ASingleStepGeneralDetectOrTaskSwitchInRing0IsNeverTheGuests)
{
    const uint32_t dr7 = enable(0) | rw(0, 3);
    for (uint32_t b : {kDr6Bs, kDr6Bd, kDr6Bt}) EXPECT_FALSE(dr_hit_is_guest_data(dr7, kDr6Default | 1 | b)) << b;
}

} // namespace
} // namespace pvmmu::x86
