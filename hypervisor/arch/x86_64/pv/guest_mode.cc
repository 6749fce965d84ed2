// Switching a vCPU between its guest kernel and guest user mode; see
// pv/guest_mode.h.
#include "pv/guest_mode.h"

#include "cpu/cpu_bits.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"

namespace pvmmu::x86 {

// While the hypervisor runs, IA32_KERNEL_GS_BASE holds the guest's live %gs
// base (cpu/trap_entry.S swapped it out at the entry, trap_return swaps it
// back): the base of the mode the vCPU is in. The other mode's waits in
// VcpuArch. CR3 and the MSR change together with interrupts off, so that no
// interrupt sees one mode's L4 with the other's base.
namespace {

[[gnu::always_inline]] inline void switch_mode(Vcpu& v, bool user)
{
    VcpuArch& a = arch(v);
    uint64_t flags;
    asm volatile("pushfq\n\tpop %0\n\tcli" : "=r"(flags) : : "memory");
    uint64_t& leaving = user ? a.gs_base_kernel : a.gs_base_user;
    const uint64_t entering = user ? a.gs_base_user : a.gs_base_kernel;
    leaving = rdmsr(MSR_KERNEL_GS_BASE);
    wrmsr(MSR_KERNEL_GS_BASE, entering);
    write_cr3(maddr_of(user ? v.guest_table_user : v.guest_table).v);
    a.user_mode = user;
    if (flags & RFLAGS_IF) sti();
}

} // namespace

void guest_switch_to_user_mode(Vcpu& v) { switch_mode(v, true); }
void guest_switch_to_kernel_mode(Vcpu& v) { switch_mode(v, false); }

} // namespace pvmmu::x86
