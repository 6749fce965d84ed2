// See pv/dr.h. Bit positions: SDM Vol. 3B 18.2 "Debug Registers";
// the rules are Xen 4.17's for a PV guest (docs/abi.md §12).
#include "pv/dr.h"

#include <pvmmu/abi.h>

#include "pv/domain.h"

namespace pvmmu::x86 {

namespace {

// The fixed bits of DR6 and DR7 as the domain's CPUID makes them: RTM and
// BLD add bits of their own (DR6's active low, DR7's RTM an enable).
uint32_t adjust_dr6(uint32_t v, DrPolicy p)
{
    uint32_t ones = kDr6Default;
    if (p.rtm) ones &= ~kDr6Rtm;
    if (p.bld) ones &= ~kDr6Bld;
    return (v | ones) & ~kDr6Zeros;
}

uint32_t adjust_dr7(uint32_t v, DrPolicy p)
{
    const uint32_t zeros = kDr7Zeros | (p.rtm ? 0 : kDr7Rtm);
    return (v & ~zeros) | kDr7Default;
}

// The enables (Ln, Gn) of the breakpoints whose RW is 10, I/O; -1 for any
// RW 10, enabled or not, without CR4.DE, where it is undefined (Xen's rule).
long io_enables(uint32_t dr7, DrPolicy p)
{
    uint32_t io = 0;
    for (unsigned n = 0; n < 4; ++n) {
        if (((dr7 >> (kDr7RwShift + 4 * n)) & 3) != kDr7RwIo) continue;
        if (!p.de) return -1;
        io |= dr7 & (3u << (2 * n));
    }
    return io;
}

} // namespace

long dr_write(DebugRegs& r, unsigned reg, uint64_t value, DrPolicy p)
{
    switch (reg) {
    case 0: case 1: case 2: case 3:
        // A breakpoint on a hypervisor address would fire in the hypervisor
        // (an instruction breakpoint there could not be resumed). The start
        // is enough: a breakpoint covers 1-8 bytes aligned to its length, and
        // both parts of the guest's space start and end 8-aligned.
        if (!guest_va_ok(value)) return -XEN_EPERM;
        r.dr[reg] = value;
        return 0;
    case 4: case 6:
        if (reg == 4 && p.de) return -XEN_ENODEV;
        if (value != uint32_t(value)) return -XEN_EINVAL;
        r.dr6 = adjust_dr6(uint32_t(value), p);
        return 0;
    case 5: case 7: {
        if (reg == 5 && p.de) return -XEN_ENODEV;
        if (value != uint32_t(value)) return -XEN_EINVAL;
        const uint32_t v = adjust_dr7(uint32_t(value), p);
        // General detect is the hypervisor's (it would fault its own MOV to
        // and from the debug registers): refused, as Xen refuses it.
        if (v & kDr7Gd) return -XEN_EPERM;
        // Xen looks for I/O breakpoints only when some breakpoint is enabled.
        const long io = v & kDr7Enables ? io_enables(v, p) : 0;
        if (io < 0) return -XEN_EPERM;
        r.dr7_io = uint32_t(io);
        r.dr7 = v & ~uint32_t(io);
        return 0;
    }
    default:
        return -XEN_ENODEV;
    }
}

long dr_read(const DebugRegs& r, unsigned reg, DrPolicy p, uint64_t& value)
{
    switch (reg) {
    case 0: case 1: case 2: case 3: value = r.dr[reg]; return 0;
    case 4: case 6:
        if (reg == 4 && p.de) return -XEN_ENODEV;
        value = r.dr6;
        return 0;
    case 5: case 7:
        if (reg == 5 && p.de) return -XEN_ENODEV;
        value = r.dr7 | r.dr7_io;
        return 0;
    default:
        return -XEN_ENODEV;
    }
}

void dr6_merge(DebugRegs& r, uint32_t cpu_dr6)
{
    r.dr6 |= cpu_dr6 & ~kDr6Default;
    r.dr6 &= cpu_dr6 | ~kDr6Default;
}

void dr6_record_emulated(DebugRegs& r, uint32_t hits) { r.dr6 |= hits | kDr6Default; }

bool dr_hit_is_guest_data(uint32_t dr7, uint32_t cpu_dr6)
{
    constexpr uint32_t kNotABreakpoint = kDr6Bs | kDr6Bd | kDr6Bt;
    uint32_t data = 0;
    for (unsigned n = 0; n < 4; ++n)
        if ((dr7 >> (2 * n) & 3) && (dr7 >> (kDr7RwShift + 4 * n) & 1)) data |= 1u << n;
    return !(cpu_dr6 & kNotABreakpoint) && (cpu_dr6 & data);
}

uint32_t io_breakpoints(const DebugRegs& r, unsigned port, unsigned size)
{
    uint32_t hits = 0;
    for (unsigned n = 0; n < 4; ++n) {
        if (!(r.dr7_io & (3u << (2 * n)))) continue;
        // LEN (the two bits above RW): 00 1 byte, 01 2, 11 4, 10 8.
        static constexpr unsigned kLen[4] = {1, 2, 8, 4};
        const unsigned len = kLen[(r.dr7 >> (kDr7RwShift + 4 * n + 2)) & 3];
        const uint64_t start = r.dr[n] & ~uint64_t(len - 1);
        if (port < start + len && start < uint64_t(port) + size) hits |= 1u << n;
    }
    return hits;
}

} // namespace pvmmu::x86
