// A PV guest's debug registers as Xen 4.17 keeps them (set_debugreg and
// get_debugreg, hypercalls 8 and 9, and the emulated MOV to and from
// %dr0-%dr7; docs/abi.md §12): the hardware-independent rules, pure
// functions of their arguments so that the host's unit tests can feed them
// every register and bit (tests/arch/guest_dr_test.cc). pv/debugreg.cc loads
// the result into the CPU while the vCPU runs and delivers its #DB.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

// DR6 and DR7 bits (SDM Vol. 3B 18.2 "Debug Registers").
inline constexpr uint32_t kDr6Default = 0xffff0ff0;   // DR6 after reset: reserved bits set
inline constexpr uint32_t kDr6Zeros = 1u << 12;       // reads as 0
inline constexpr uint32_t kDr6Bld = 1u << 11;         // bus-lock detected: active low, with BLD only
inline constexpr uint32_t kDr6Bd = 1u << 13;          // debug-register access detected
inline constexpr uint32_t kDr6Bs = 1u << 14;          // single step
inline constexpr uint32_t kDr6Bt = 1u << 15;          // task switch
inline constexpr uint32_t kDr6Rtm = 1u << 16;         // RTM: active low, with RTM only
inline constexpr uint32_t kDr6Hits = 0xf;             // B0-B3: breakpoint n's condition met
inline constexpr uint32_t kDr7Default = 1u << 10;     // reads as 1
inline constexpr uint32_t kDr7Zeros = 0xd000;         // bits 12, 14, 15
inline constexpr uint32_t kDr7Rtm = 1u << 11;         // RTM debugging: with RTM only
inline constexpr uint32_t kDr7Gd = 1u << 13;          // general detect
inline constexpr uint32_t kDr7Enables = 0xff;         // L0 G0 ... L3 G3
inline constexpr unsigned kDr7RwShift = 16;           // then RW (2 bits) and LEN (2 bits) per breakpoint
inline constexpr uint32_t kDr7RwIo = 2;               // RW 10: an I/O breakpoint, with CR4.DE only
static_assert((kDr6Default & kDr6Zeros) == 0);

// A vCPU's virtual debug registers (Xen: arch.dr[], dr6, dr7, pv.dr7_emul).
struct DebugRegs {
    uint64_t dr[4] = {};
    uint32_t dr6 = kDr6Default;
    uint32_t dr7 = kDr7Default;   // as the guest set it, less dr7_io
    uint32_t dr7_io = 0;          // the enables of I/O breakpoints: emulated, never loaded
};

// What the domain's CPUID policy says that the rules depend on, and the
// guest's virtual CR4.DE (DR4/DR5 alias DR6/DR7 only while it is clear).
struct DrPolicy {
    bool de = false;    // CR4.DE set by the guest
    bool rtm = false;   // CPUID.7.0:EBX.RTM
    bool bld = false;   // CPUID.7.0:ECX.BUS_LOCK_DETECT
};

// set_debugreg(reg, value), Xen's checks in Xen's order: DR0-DR3 must name a
// guest address (both ends of an 8-byte breakpoint, -EPERM otherwise); DR6
// and DR7 take 32 bits (-EINVAL above), their fixed bits forced; DR7.GD is
// -EPERM; while a breakpoint is enabled, any I/O one (RW 10) needs CR4.DE
// (-EPERM); DR4/DR5 are DR6/DR7 while CR4.DE is clear; anything else
// -ENODEV. 0 with r changed, or the errno, r unchanged.
long dr_write(DebugRegs& r, unsigned reg, uint64_t value, DrPolicy p);

// get_debugreg(reg): 0 with the value in `value`, or -ENODEV (as dr_write).
long dr_read(const DebugRegs& r, unsigned reg, DrPolicy p, uint64_t& value);

// DR7 as the CPU gets it while the vCPU runs: without the emulated I/O
// breakpoints (dr7_io, never in r.dr7) and never with GD (dr_write refuses
// it; it would make the hypervisor's own MOV to and from the debug
// registers fault).
inline uint32_t dr7_for_cpu(const DebugRegs& r) { return r.dr7 & ~kDr7Gd; }

// The CPU's DR6 at a #DB of the guest, folded into the virtual DR6 as Xen
// does: the bits that are set when active (B0-B3, BD, BS, BT) accumulate;
// those that are clear when active (RTM, BLD) are cleared.
void dr6_merge(DebugRegs& r, uint32_t cpu_dr6);

// The breakpoints an emulated instruction met (`hits`: B0-B3 of its I/O
// breakpoints, BS for a single step over it), recorded in the virtual DR6
// with its reserved ones, as Xen records what its emulator matched.
void dr6_record_emulated(DebugRegs& r, uint32_t hits);

// Whether a #DB the CPU raised in ring 0 (its DR6 `cpu_dr6`) is the guest's
// data breakpoint on an address the hypervisor touched: one the vCPU's DR7
// enables with RW 01 or 11 (a data write or access) must be among the hits
// (the CPU may report a disabled breakpoint's met condition next to it); a
// single step, general detect or task switch in ring 0 is never the guest's.
bool dr_hit_is_guest_data(uint32_t dr7, uint32_t cpu_dr6);

// The I/O breakpoints (B0-B3 bits) an emulated access of `size` bytes at
// `port` meets: enabled in dr7_io, its range (DRn aligned down to LEN)
// overlapping the access.
uint32_t io_breakpoints(const DebugRegs& r, unsigned port, unsigned size);

} // namespace pvmmu::x86
