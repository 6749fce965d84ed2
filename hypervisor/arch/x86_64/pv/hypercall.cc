// Hypercalls from ring 3 (docs/design.md §3 "Other hypercalls", docs/abi.md "Bare-metal
// guest ABI"): pv/syscall_entry.S hands over the guest's registers in Xen's
// x86-64 PV order — number in RAX, arguments in RDI, RSI, RDX, R10, R8, R9,
// result in RAX. Every call goes to the core's hypercall() (core/hypercall.h),
// as a multicall's entries do; the hypercalls only a machine with real vCPUs
// has are in the table here, which the core reaches for every number its own
// table lacks (BareMetal::arch_hypercall), so that they run inside a
// multicall as on Xen. A number in neither table is -ENOSYS.
#include <pvmmu/abi.h>

#include "core/hypercall.h"
#include "core/mmu_update_count.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/platform.h"
#include "pv/domain.h"
#include "pv/events.h"
#include "pv/guest_mode.h"
#include "pv/hypercall.h"
#include "pv/surface.h"
#include "pv/traps.h"

namespace pvmmu::x86 {

namespace {

using ArchHandler = HcResult (*)(Vcpu&, HypercallFrame&);

// A handler that always completes, its result the call's.
template <long (*Handler)(Vcpu&, HypercallFrame&)>
HcResult completes(Vcpu& v, HypercallFrame& f)
{
    return done(Handler(v, f));
}

constexpr HypercallTable<ArchHandler>::Entry kArchEntries[] = {
    {__HYPERVISOR_set_trap_table, do_set_trap_table},
    {__HYPERVISOR_set_gdt, completes<do_set_gdt>},
    {__HYPERVISOR_set_timer_op, completes<do_set_timer_op>},
    {__HYPERVISOR_update_descriptor, completes<do_update_descriptor>},
    {__HYPERVISOR_stack_switch, completes<do_stack_switch>},
    {__HYPERVISOR_fpu_taskswitch, completes<do_fpu_taskswitch>},
    {__HYPERVISOR_vm_assist, completes<do_vm_assist>},
    {__HYPERVISOR_set_callbacks, completes<do_set_callbacks>},
    {__HYPERVISOR_console_io, do_console_io},
    {__HYPERVISOR_iret, do_iret},
    {__HYPERVISOR_sched_op, completes<do_sched_op>},
    {__HYPERVISOR_callback_op, completes<do_callback_op>},
    {__HYPERVISOR_vcpu_op, completes<do_vcpu_op>},
    {__HYPERVISOR_event_channel_op, completes<do_event_channel_op>},
    {__HYPERVISOR_memory_op, completes<do_memory_op>},
    {__HYPERVISOR_pvmmu_op, completes<do_pvmmu_op>},
    {__HYPERVISOR_set_debugreg, completes<do_set_debugreg>},
    {__HYPERVISOR_get_debugreg, completes<do_get_debugreg>},
    {__HYPERVISOR_physdev_op, completes<do_physdev_op>},
    {__HYPERVISOR_set_segment_base, completes<do_set_segment_base>},
};
constexpr HypercallTable<ArchHandler> kArch(kArchEntries);
// syscall_dispatch calls do_iret directly; the table must agree (and the
// core's table do_mmu_update: core/hypercall.cc).
static_assert(kArch.find(__HYPERVISOR_iret) == do_iret);

// The table is the one pv/surface.h lists (the host's ABI-table test reads that list).
constexpr bool table_is_the_surface()
{
    if (sizeof(kArchEntries) / sizeof(kArchEntries[0]) != sizeof(kArchHypercalls) / sizeof(kArchHypercalls[0]))
        return false;
    for (unsigned i = 0; i < sizeof(kArchHypercalls) / sizeof(kArchHypercalls[0]); ++i)
        if (kArchEntries[i].op != kArchHypercalls[i]) return false;
    return true;
}
static_assert(table_is_the_surface(), "pv/surface.h's kArchHypercalls must list this table's numbers");

// The page-table hypercalls: they raise no event, unmask none and move no
// deadline, so the return to the guest need not look (pv/events.h
// guest_return_check_due). A multicall may hold anything, and is looked
// after.
bool leaves_events(uint64_t op)
{
    return op == __HYPERVISOR_mmu_update || op == __HYPERVISOR_mmuext_op || op == __HYPERVISOR_update_va_mapping;
}

} // namespace

HcResult BareMetal::arch_hypercall(Vcpu& v, HypercallFrame& f)
{
    const ArchHandler h = kArch.find(f.op);
    return h ? h(v, f) : done(-XEN_ENOSYS);
}

namespace {

// Every hypercall, the core's and the platform's, direct or in a multicall,
// goes through the core's hypercall(). The call's HypercallFrame is the
// frame's own registers (cpu/traps.h TrapFrame::hc): a handler writes its
// arguments only when it is preempted, so every other register is the
// guest's on return (docs/abi.md "Hypercalls"). Xen's continuation: the
// arguments then describe what is left, and the guest re-executes its
// SYSCALL (2 bytes) with RAX still the number, so interrupts are taken
// between the rounds. Inline into syscall_trap, its one caller.
[[gnu::always_inline]] inline void syscall_dispatch(Vcpu& v, TrapFrame* f)
{
    const Section in_core;   // kept out while the invariant check runs
    HypercallFrame& hf = f->hc;
    const uint64_t op = hf.op;
    // pv/events.h: iret marks the upcall's check itself when it unmasks one (do_iret).
    if (op != __HYPERVISOR_iret && !leaves_events(op)) guest_return_check_due();
    if (op == __HYPERVISOR_mmu_update) count_mmu_update(v.calls, hf.arg[1]);
    // iret and mmu_update (the two calls of a copy-on-write fault, the most
    // frequent of Linux's) straight to their handlers: the tables
    // (core/hypercall.cc, kArch above; both asserted) choose the same ones; a
    // multicall's entries go by them.
    const HcResult r = op == __HYPERVISOR_iret         ? do_iret(v, hf)
                       : op == __HYPERVISOR_mmu_update ? do_mmu_update(*core(), v, hf)
                                                       : hypercall(*core(), v, hf);
    if (!r.preempted()) {
        f->rax = uint64_t(r.rc);
        count(v.calls.hypercalls);
        if (op == __HYPERVISOR_multicall) count(v.calls.multicalls);
    } else {
        count(v.calls.continuations);
        f->rip -= 2;
    }
    // An iret to user mode (do_iret): its L4 and %gs base from here on, once
    // the call has made its last write into kernel memory.
    VcpuArch& a = arch(v);
    if (a.user_mode_next) {
        a.user_mode_next = false;
        guest_enter_user_mode(v);
    }
    // An event the call raised, or one it unmasked, arrives on the return to
    // the guest (guest_exit's guest_return_events).
}

} // namespace

// SYSCALL from the guest's 64-bit mode (pv/syscall_entry.S, through
// syscall_save in cpu/trap_entry.S): from its user mode its system call,
// bounced to its kernel (pv/traps.cc); from its kernel mode, a hypercall,
// whose number says whether the return's check is needed.
extern "C" void syscall_trap(TrapFrame* f)
{
    Vcpu& v = *this_vcpu();
    if (guest_in_user_mode(v)) {
        guest_return_check_due();
        guest_user_syscall(*f);
    } else {
        sti();   // shootdown IPIs may arrive during a hypercall
        syscall_dispatch(v, f);
        cli();
    }
    guest_exit(*f);
}

} // namespace pvmmu::x86
