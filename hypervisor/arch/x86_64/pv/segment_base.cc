// A PV vCPU's segment bases (segment_base.h): the set_segment_base
// hypercall, and the checks the emulated wrmsr of the base MSRs shares with
// it (emulate.cc).
#include <pvmmu/abi.h>

#include "core/segment_base_rules.h"
#include "cpu/cpu_bits.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "pv/hypercall.h"
#include "pv/segment_base.h"

namespace pvmmu::x86 {

// A segment base as Xen's set_segment_base and its MSR writes take it
// (core/segment_base_rules.h: canonical, Xen's -EINVAL or #GP(0), and here
// also outside the hypervisor's L4 slots; docs/security.md "Segment
// bases"): a guest %gs base is then never one of the PerCpu areas
// cpu/trap_entry.S compares IA32_GS_BASE with.
// SEGBASE_FS and SEGBASE_GS_KERNEL go to the CPU, which holds them while the
// vCPU runs: the hypervisor never reads through %fs, and its %gs is swapped in
// at every entry, so the kernel's %gs base waits in IA32_KERNEL_GS_BASE until
// trap_return's SWAPGS. The user %gs base is kept, and made the live one
// whenever the vCPU enters its user mode (pv/guest_mode.cc); these calls
// are made in kernel mode only (hypercalls, emulated wrmsr).
bool set_segment_base(Vcpu& v, unsigned which, uint64_t base)
{
    if (set_segment_base_check(which, base)) return false;
    switch (which) {
    case SEGBASE_FS: wrmsr(MSR_FS_BASE, base); return true;
    case SEGBASE_GS_KERNEL: wrmsr(MSR_KERNEL_GS_BASE, base); return true;
    case SEGBASE_GS_USER: arch(v).gs_base_user = base; return true;
    default: return false;
    }
}

namespace {

// SEGBASE_GS_USER_SEL, Xen's: the selector (RPL forced to 3 unless null)
// into %gs, where it stays for the guest to read, and the base its
// descriptor gives (GDT or LDT, as the CPU resolves it) into the user mode's
// %gs base; a selector the CPU refuses is loaded as null, whose base is 0,
// and the call still returns 0 (Xen never built an error into it; Linux
// would BUG()). The load writes IA32_GS_BASE, the PerCpu while the
// hypervisor runs: load_gs_user_sel (pv/segment_base.S) parks the PerCpu in
// IA32_KERNEL_GS_BASE around it, so an entry at any of its instructions (an
// NMI, #MC, or the load's fault) recovers it; interrupts are off meanwhile,
// as nothing else may run on the parked state.
void load_user_gs(Vcpu& v, uint16_t sel)
{
    sel = user_gs_selector(sel);
    uint64_t flags;
    asm volatile("pushfq\n\tpop %0\n\tcli" : "=r"(flags) : : "memory");
    const uint64_t base = load_gs_user_sel(sel);
    if (flags & RFLAGS_IF) sti();
    arch(v).gs_base_user = base;
}

} // namespace

// set_segment_base(which, base), Xen's: SEGBASE_FS, SEGBASE_GS_KERNEL and
// SEGBASE_GS_USER set that base; SEGBASE_GS_USER_SEL loads a selector into
// %gs (load_user_gs); the answers are core/segment_base_rules.h's.
long do_set_segment_base(Vcpu& v, HypercallFrame& f)
{
    const unsigned which = unsigned(f.arg[0]);
    if (long rc = set_segment_base_check(which, f.arg[1])) return rc;
    if (which == SEGBASE_GS_USER_SEL) {
        load_user_gs(v, uint16_t(f.arg[1]));
        return 0;
    }
    return set_segment_base(v, which, f.arg[1]) ? 0 : -XEN_EINVAL;
}

} // namespace pvmmu::x86
