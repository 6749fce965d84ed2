// A PV guest's debug registers in the CPU (docs/abi.md §12,
// docs/security.md): set_debugreg / get_debugreg and the emulated MOV to and
// from %drN keep the virtual registers by Xen's rules (pv/dr.h); while
// the vCPU runs, its DR0-DR3 and DR7 are the CPU's, so its breakpoints are
// real, and each #DB it takes reaches its handler with the virtual DR6.
//
// What the hypervisor must never let a guest's breakpoint do:
// - Fire in the hypervisor at a hypervisor address: DR0-DR3 hold guest
//   addresses only (dr_write), so an instruction breakpoint (a fault, which
//   could not be resumed) never matches the hypervisor's code, which lives
//   in its own L4 slots.
// - Hang or crash it when the hypervisor touches the guest's memory: a data
//   breakpoint on a guest address fires in ring 0 when the hypervisor reads
//   or writes there (a hypercall's copy, a bounce frame). That is a trap,
//   after the access: it is ignored, as Xen 4.17 ignores a #DB in its own
//   context (guest_debug_in_hypervisor).
// - Nest on the #DB IST stack: a #DB from the guest runs on IST4, and its
//   bounce frame is written on the guest's stack, where a data breakpoint
//   would raise a second #DB on the same IST stack, over the first one's
//   frame. So the guest's DR7 is off in the CPU while its #DB is handled.
// - Trap the hypervisor's own MOV to and from the debug registers: DR7.GD
//   is refused (-EPERM, as Xen), and masked again when DR7 is loaded.
#include <pvmmu/abi.h>

#include "cpu/cpu_bits.h"
#include "cpu/cpu_features.h"
#include "cpu/exceptions.h"
#include "cpu/percpu.h"
#include "cpu/x86.h"
#include "pv/debugreg.h"
#include "pv/domain.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/traps.h"

namespace pvmmu::x86 {

namespace {

uint64_t read_dr6()
{
    uint64_t v;
    asm volatile("mov %%dr6, %0" : "=r"(v));
    return v;
}

void write_dr(unsigned reg, uint64_t v)
{
    switch (reg) {
    case 0: asm volatile("mov %0, %%dr0" : : "r"(v)); break;
    case 1: asm volatile("mov %0, %%dr1" : : "r"(v)); break;
    case 2: asm volatile("mov %0, %%dr2" : : "r"(v)); break;
    case 3: asm volatile("mov %0, %%dr3" : : "r"(v)); break;
    case 6: asm volatile("mov %0, %%dr6" : : "r"(v)); break;
    default: asm volatile("mov %0, %%dr7" : : "r"(v)); break;
    }
}

// The hypervisor's own DR7: no breakpoint.
void dr7_off() { write_dr(7, kDr7Default); }

} // namespace

DrPolicy guest_dr_policy(Vcpu& v)
{
    // The CPU's leaves as the guest sees them (pv/emulate.cc passes leaf 7
    // and CPUID.1:EDX.DE through), read once at boot.
    const CpuFeatures& c = boot_cpu_features();
    return DrPolicy{arch(v).cr4_de, c.rtm, c.bld};
}

long guest_set_debugreg(Vcpu& v, unsigned reg, uint64_t value)
{
    DebugRegs& r = arch(v).dr;
    if (const long rc = dr_write(r, reg, value, guest_dr_policy(v))) return rc;
    // The vCPU is this CPU's (set_debugreg acts on the caller only).
    if (reg < 4) write_dr(reg, r.dr[reg]);
    else if (reg == 5 || reg == 7) write_dr(7, dr7_for_cpu(r));
    return 0;
}

// set_debugreg(reg, value): 0 or the errno of dr_write.
long do_set_debugreg(Vcpu& v, HypercallFrame& f) { return guest_set_debugreg(v, unsigned(f.arg[0]), f.arg[1]); }

// get_debugreg(reg): the value, or -ENODEV; as on Xen, a value that reads as
// a negative errno cannot be told from one.
long do_get_debugreg(Vcpu& v, HypercallFrame& f)
{
    uint64_t value;
    if (const long rc = dr_read(arch(v).dr, unsigned(f.arg[0]), guest_dr_policy(v), value)) return rc;
    return long(value);
}

void guest_debug_load(Vcpu& v)
{
    const DebugRegs& r = arch(v).dr;
    for (unsigned i = 0; i < 4; ++i) write_dr(i, r.dr[i]);
    write_dr(7, dr7_for_cpu(r));
}

void guest_debug_unload() { dr7_off(); }

bool guest_debug_trap(TrapFrame& f)
{
    dr7_off();   // before anything touches the guest's memory (above)
    const uint32_t cpu_dr6 = uint32_t(read_dr6());
    write_dr(6, kDr6Default);   // the CPU never clears DR6 itself
    Vcpu& v = *this_cpu().vcpu;
    dr6_merge(arch(v).dr, cpu_dr6);
    if (!guest_bounce(f)) guest_crash(f, "#DB with no handler");
    write_dr(7, dr7_for_cpu(arch(v).dr));
    return true;
}

bool guest_debug_in_hypervisor(const TrapFrame& f)
{
    Vcpu* v = this_cpu().vcpu;
    if (f.vector != kExcDB || !v) return false;
    if (!dr_hit_is_guest_data(arch(*v).dr.dr7, uint32_t(read_dr6()))) return false;
    write_dr(6, kDr6Default);
    return true;
}

void guest_debug_after_emulation(TrapFrame& f, uint32_t hits)
{
    if (f.rflags & RFLAGS_TF) hits |= kDr6Bs;
    if (!hits) return;
    dr6_record_emulated(arch(*this_cpu().vcpu).dr, hits);
    if (!guest_deliver(f, kExcDB, false)) guest_crash(f, "#DB after an emulated instruction");
}

} // namespace pvmmu::x86
