// Port I/O from a PV kernel (docs/abi.md §12): IN, OUT,
// INS, OUTS, CLI and STI, which the CPU refuses a ring-3 kernel (IOPL 0),
// and PHYSDEVOP_set_iopl, which allows them, as on Xen 4.17:
//
// - The virtual IOPL (0-3) starts at 0; which IOPL lets the kernel at the
//   ports, and what each port reads, are core/port_io_rules.h's. Xen's
//   emulated ports other than the PCI configuration address (the PIT's
//   channel 2 and speaker port, the RTC, PCI configuration data) read all
//   ones on pvmmu, a difference docs/abi.md §12 lists.
// - CLI and STI, allowed, do nothing (Xen's "too dangerous" comment: the
//   event mask is the guest's business through vcpu_info).
// - INS and OUTS move their elements through the guest's page tables, as a
//   hypercall's copy; with REP at most kRepBatch elements per trap, after
//   which RIP stays on the instruction and the guest's next run of it goes
//   on (an interrupt may come between, as on a CPU), so no guest makes the
//   hypervisor loop. A copy that faults delivers the #PF at that element.
#include <pvmmu/abi.h>
#include <xen/physdev.h>

#include "core/port_io_rules.h"
#include "cpu/cpu_bits.h"
#include "cpu/exceptions.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "pv/domain.h"
#include "pv/port_io.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kRepBatch = 1024;

Platform& platform() { return core()->platform(); }

uint32_t port_read(GuestDomain& d, unsigned port, unsigned size)
{
    return port_read_value(port, size, port_is_cf8(port, size) ? d.pci_cf8.load(std::memory_order_relaxed) : 0);
}

void port_write(GuestDomain& d, unsigned port, unsigned size, uint32_t value)
{
    if (port_is_cf8(port, size)) d.pci_cf8.store(value, std::memory_order_relaxed);
}

// The I/O breakpoints an access meets: none while the guest's CR4.DE is
// clear, as Xen's check_guest_io_breakpoint.
uint32_t io_hits(Vcpu& v, unsigned port, unsigned size)
{
    return arch(v).cr4_de ? io_breakpoints(arch(v).dr, port, size) : 0;
}

// INS / OUTS: the elements, RDI or RSI stepped by DF; 0 when done, -1 when
// RCX is left for the next run, or 1 with the exception to deliver in f.
// An element outside the guest's part of the address space (non-canonical,
// or the hypervisor's slots) is #GP(0), as Xen's; a #PF comes from the copy's
// own fault, so CR2 names the faulting byte (never an older fault's address).
int string_io(Vcpu& v, TrapFrame& f, const PrivInsn& in, unsigned port, uint32_t* hits)
{
    GuestDomain& d = guest_domain(v);
    const bool ins = in.op == PrivOp::Ins;
    uint64_t& index = ins ? f.rdi : f.rsi;
    const int64_t step = f.rflags & RFLAGS_DF ? -int64_t(in.size) : int64_t(in.size);
    uint64_t count = in.rep ? f.rcx : 1;
    for (unsigned done = 0; count; ++done) {
        if (done == kRepBatch) return -1;
        const uint64_t last = index + in.size - 1;
        if (last < index || !guest_va_ok(index) || !guest_va_ok(last)) {
            f.vector = kExcGP, f.error = 0;
            return 1;
        }
        if (ins) {
            const uint32_t value = port_read(d, port, in.size);
            if (platform().copy_to_guest(v, Vaddr{index}, &value, in.size)) {
                f.vector = kExcPF, f.error = kPfWrite;   // a write of the kernel's
                return 1;
            }
        } else {
            uint32_t value = 0;
            if (platform().copy_from_guest(v, &value, Vaddr{index}, in.size)) {
                f.vector = kExcPF, f.error = 0;   // a read
                return 1;
            }
            port_write(d, port, in.size, value);
        }
        arch(v).counters.port_io.fetch_add(1, std::memory_order_relaxed);
        *hits |= io_hits(v, port, in.size);
        index += uint64_t(step);
        if (in.rep) f.rcx = --count;
        else count = 0;
    }
    return 0;
}

} // namespace

int guest_port_io(Vcpu& v, TrapFrame& f, const PrivInsn& in, uint32_t* hits)
{
    if (!port_io_allowed(arch(v).iopl)) return 0;
    GuestDomain& d = guest_domain(v);
    const unsigned port = in.port >= 0 ? unsigned(in.port) : unsigned(f.rdx & 0xffff);
    switch (in.op) {
    case PrivOp::Cli: case PrivOp::Sti: return in.len;
    case PrivOp::In: f.rax = accumulator_after_in(f.rax, in.size, port_read(d, port, in.size)); break;
    case PrivOp::Out: port_write(d, port, in.size, uint32_t(f.rax)); break;
    case PrivOp::Ins: case PrivOp::Outs: {
        const int rc = string_io(v, f, in, port, hits);
        return rc == 0 ? in.len : rc < 0 ? -1 : 0;
    }
    default: return 0;
    }
    arch(v).counters.port_io.fetch_add(1, std::memory_order_relaxed);
    *hits |= io_hits(v, port, in.size);
    return in.len;
}

} // namespace pvmmu::x86
