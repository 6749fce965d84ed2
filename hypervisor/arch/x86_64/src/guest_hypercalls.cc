// Hypercalls from ring 3 (SPEC §3 "Other hypercalls", docs/abi.md "Bare-metal
// guest ABI"): syscall_entry.S hands over the guest's registers in Xen's
// x86-64 PV order — number in RAX, arguments in RDI, RSI, RDX, R10, R8, R9,
// result in RAX. The hypercalls only a machine with real vCPUs has are in the
// table here; every other number goes to the core's table (core/hypercall.h),
// whose default is -ENOSYS.
#include <pvmmu/abi.h>

#include "arch/core_glue.h"
#include "arch/guest.h"
#include "arch/guest_surface.h"
#include "arch/percpu.h"
#include "arch/quiesce.h"
#include "arch/x86.h"
#include "core/hypercall.h"

namespace pvmmu::x86 {

namespace {

// Xen's argument registers, in order.
struct Args {
    uint64_t a[6];
    explicit Args(const TrapFrame& f) : a{f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9} {}
};

// sched_op(cmd, arg): SCHEDOP_yield (a vCPU has its CPU to itself: nothing
// to yield to) and SCHEDOP_shutdown with a sched_shutdown_t.
long do_sched_op(Vcpu& v, TrapFrame& f)
{
    const Args a(f);
    const uint32_t cmd = uint32_t(a.a[0]);   // an int in Xen's prototype
    if (!arch_subop_known(__HYPERVISOR_sched_op, cmd)) return -XEN_ENOSYS;
    switch (cmd) {
    case SCHEDOP_yield:
        return 0;
    case SCHEDOP_shutdown: {
        sched_shutdown_t s;
        if (core()->platform().copy_from_guest(v, &s, Vaddr{a.a[1]}, sizeof(s))) return -XEN_EFAULT;
        if (s.reason > SHUTDOWN_MAX) return -XEN_EINVAL;
        guest_shutdown(s.reason);
    }
    default:
        return -XEN_ENOSYS;
    }
}

using ArchHandler = long (*)(Vcpu&, TrapFrame&);

constexpr HypercallTable<ArchHandler>::Entry kArchEntries[] = {
    {__HYPERVISOR_set_trap_table, do_set_trap_table},
    {__HYPERVISOR_set_gdt, do_set_gdt},
    {__HYPERVISOR_update_descriptor, do_update_descriptor},
    {__HYPERVISOR_stack_switch, do_stack_switch},
    {__HYPERVISOR_fpu_taskswitch, do_fpu_taskswitch},
    {__HYPERVISOR_vm_assist, do_vm_assist},
    {__HYPERVISOR_set_callbacks, do_set_callbacks},
    {__HYPERVISOR_console_io, do_console_io},
    {__HYPERVISOR_iret, do_iret},
    {__HYPERVISOR_sched_op, do_sched_op},
    {__HYPERVISOR_callback_op, do_callback_op},
    {__HYPERVISOR_vcpu_op, do_vcpu_op},
    {__HYPERVISOR_event_channel_op, do_event_channel_op},
    {__HYPERVISOR_memory_op, do_memory_op},
    {__HYPERVISOR_pvmmu_op, do_pvmmu_op},
    {__HYPERVISOR_set_debugreg, do_set_debugreg},
    {__HYPERVISOR_get_debugreg, do_get_debugreg},
    {__HYPERVISOR_physdev_op, do_physdev_op},
    {__HYPERVISOR_set_segment_base, do_set_segment_base},
};
constexpr HypercallTable<ArchHandler> kArch(kArchEntries);

// The table is the one guest_surface.h lists (the host's ABI-table test reads that list).
constexpr bool table_is_the_surface()
{
    if (sizeof(kArchEntries) / sizeof(kArchEntries[0]) != sizeof(kArchHypercalls) / sizeof(kArchHypercalls[0]))
        return false;
    for (unsigned i = 0; i < sizeof(kArchHypercalls) / sizeof(kArchHypercalls[0]); ++i)
        if (kArchEntries[i].op != kArchHypercalls[i]) return false;
    return true;
}
static_assert(table_is_the_surface(), "arch/guest_surface.h's kArchHypercalls must list this table's numbers");

} // namespace

// Xen's continuation: the arguments now describe what is left, and the guest
// re-executes its SYSCALL (2 bytes) with RAX still the number, so interrupts
// are taken between the rounds.
long hypercall_continue(TrapFrame& f)
{
    f.rip -= 2;
    return long(f.rax);
}

void syscall_dispatch(TrapFrame* f)
{
    const Section in_core;   // kept out while the invariant check runs
    Vcpu& v = *this_cpu().vcpu;
    const uint64_t op = f->rax;
    if (const ArchHandler h = kArch.find(op)) {
        f->rax = uint64_t(h(v, *f));
        return;
    }
    const Args a(*f);
    HypercallFrame hf{op, {a.a[0], a.a[1], a.a[2], a.a[3], a.a[4], a.a[5]}};
    const HcResult r = hypercall(*core(), v, hf);
    if (!r.preempted) {
        f->rax = uint64_t(r.rc);
        return;
    }
    f->rdi = hf.arg[0], f->rsi = hf.arg[1], f->rdx = hf.arg[2];
    f->r10 = hf.arg[3], f->r8 = hf.arg[4], f->r9 = hf.arg[5];
    hypercall_continue(*f);
}

} // namespace pvmmu::x86
