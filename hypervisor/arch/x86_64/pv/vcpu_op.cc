// vcpu_op (docs/design.md §3; <xen/vcpu.h>): secondary vCPUs of a domain. Each vCPU is
// pinned to its own CPU (vCPU i on CPU first_cpu + i, domain_builder.h), which idles
// until the vCPU is brought up. docs/abi.md §10 lists where pvmmu differs
// from Xen.
#include <stddef.h>

#include <pvmmu/abi.h>

#include "core/refs.h"
#include "core/vcpu_op_rules.h"
#include "cpu/cpu_bits.h"
#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/selectors.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/paging.h"
#include "pv/descriptors.h"
#include "pv/domain.h"
#include "pv/events.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/runstate.h"
#include "pv/surface.h"
#include "pv/traps.h"
#include "pv/vcpu_info.h"
#include "pv/vcpu_op.h"

namespace pvmmu::x86 {

namespace {

constexpr uint64_t kRflagsIf = RFLAGS_IF, kRflagsFixed = RFLAGS_FIXED, kRflagsIopl = RFLAGS_IOPL;

// VCPUOP_initialise, as Xen's arch_set_info_guest for a 64-bit PV vCPU: from
// the context the registers (user_regs), the L4 (ctrlreg[3]), the user L4
// (ctrlreg[1], 0: none; checked as MMUEXT_NEW_USER_BASEPTR checks it, and
// replacing the one the vCPU had), the mode it starts in (flags'
// VGCF_in_kernel; user mode needs a user L4, else -EINVAL, as on Xen;
// pv/guest_mode.h), the virtual CR2
// (ctrlreg[2]), the segment bases (fs_base, gs_base_kernel, gs_base_user),
// the whole virtual IDT (trap_ctxt[], by position: an address of 0 leaves
// that vector without a handler), the event, failsafe and syscall callbacks
// and the kernel stack (kernel_ss, kernel_sp), each with the check the
// hypercall that sets it applies (set_segment_base, set_trap_table,
// set_callbacks, stack_switch): -EINVAL for a value it refuses. So nothing
// the vCPU set before it went down survives. kernel_ss = kernel_sp = 0 is
// taken as no kernel stack, what a new vCPU has (stack_switch would refuse
// it). The rest of vcpu_guest_context is not used (docs/abi.md §12.3).
long initialise_locked(Vcpu& self, Vcpu& t, uint64_t ctx_va);

// The vCPU is Busy while it changes; the states it goes through and what
// each call answers meanwhile: core/vcpu_op_rules.h.
long initialise(Vcpu& self, Vcpu& t, uint64_t ctx_va)
{
    std::atomic<VcpuState>& st = arch(t).state;
    VcpuState was = st.load(std::memory_order_acquire);
    do {
        if (long rc = vcpu_initialise_check(was)) return rc;
    } while (!st.compare_exchange_weak(was, VcpuState::Busy, std::memory_order_acq_rel));
    const long rc = initialise_locked(self, t, ctx_va);
    st.store(vcpu_initialised_state(rc), std::memory_order_release);
    return rc;
}

// The context's trap_ctxt[] into t's virtual IDT, a few entries at a time
// (the whole array is 4 KiB: not one stack object). t is Busy, not running.
long take_trap_table(Vcpu& self, Vcpu& t, uint64_t ctx_va)
{
    constexpr unsigned kChunk = 16;
    constexpr unsigned kEntries = sizeof(vcpu_guest_context_t::trap_ctxt) / sizeof(trap_info_t);
    static_assert(kEntries == sizeof(VcpuArch::trap) / sizeof(TrapEntry) && kEntries % kChunk == 0);
    Platform& p = core()->platform();
    VcpuArch& a = arch(t);
    for (unsigned i = 0; i < kEntries; i += kChunk) {
        trap_info_t chunk[kChunk];
        const uint64_t va = ctx_va + offsetof(vcpu_guest_context_t, trap_ctxt) + i * sizeof(trap_info_t);
        if (p.copy_from_guest(self, chunk, Vaddr{va}, sizeof(chunk))) return -XEN_EFAULT;
        for (unsigned j = 0; j < kChunk; ++j) {
            if (!trap_entry_ok(chunk[j])) return -XEN_EINVAL;
            a.trap[i + j] = trap_entry(chunk[j]);
        }
    }
    return 0;
}

// The context's words initialise_locked takes besides user_regs and trap_ctxt.
struct ContextWords {
    uint64_t cr1, cr2, cr3;
    uint64_t stack[2];  // kernel_ss, kernel_sp: adjacent in the context
    uint64_t event, failsafe, syscall;
    uint64_t base[3];   // fs_base, gs_base_kernel, gs_base_user: adjacent in the context
    uint64_t flags;     // VGCF_*
};

long read_words(Vcpu& self, uint64_t ctx_va, ContextWords& w)
{
    static_assert(offsetof(vcpu_guest_context_t, gs_base_user) == offsetof(vcpu_guest_context_t, fs_base) + 16);
    static_assert(offsetof(vcpu_guest_context_t, kernel_sp) == offsetof(vcpu_guest_context_t, kernel_ss) + 8);
    Platform& p = core()->platform();
    auto word = [&](uint64_t* to, size_t off, size_t len) {
        return p.copy_from_guest(self, to, Vaddr{ctx_va + off}, len) != 0;
    };
    using C = vcpu_guest_context_t;
    if (word(&w.cr1, offsetof(C, ctrlreg[1]), 8) || word(&w.cr2, offsetof(C, ctrlreg[2]), 8) ||
        word(&w.cr3, offsetof(C, ctrlreg[3]), 8) ||
        word(w.stack, offsetof(C, kernel_ss), 16) || word(&w.event, offsetof(C, event_callback_eip), 8) ||
        word(&w.failsafe, offsetof(C, failsafe_callback_eip), 8) ||
        word(&w.syscall, offsetof(C, syscall_callback_eip), 8) || word(w.base, offsetof(C, fs_base), 24) ||
        word(&w.flags, offsetof(C, flags), 8))
        return -XEN_EFAULT;
    return 0;
}

long initialise_locked(Vcpu& self, Vcpu& t, uint64_t ctx_va)
{
    VcpuArch& a = arch(t);
    Platform& p = core()->platform();
    cpu_user_regs_t r;
    ContextWords w;
    if (p.copy_from_guest(self, &r, Vaddr{ctx_va + offsetof(vcpu_guest_context_t, user_regs)}, sizeof(r)) ||
        read_words(self, ctx_va, w))
        return -XEN_EFAULT;
    const VcpuContextArgs args{.rip = r.rip, .rsp = r.rsp, .base = {w.base[0], w.base[1], w.base[2]},
                               .event = w.event, .failsafe = w.failsafe, .syscall = w.syscall,
                               .kernel_ss = w.stack[0], .kernel_sp = w.stack[1], .cr1 = w.cr1, .cr3 = w.cr3,
                               .flags = w.flags};
    if (long rc = vcpu_context_check(args, [](Mfn m) { return core()->mem().valid(m); })) return rc;
    const bool no_stack = vcpu_context_no_stack(args);
    const Mfn l4{xen_cr3_to_pfn(w.cr3)};
    const Mfn user_l4{xen_cr3_to_pfn(w.cr1)};
    const bool has_user = w.cr1 != 0;
    const bool in_kernel = w.flags & VGCF_in_kernel;
    // The GDT the vCPU starts with (Linux's per-CPU GDT for a secondary
    // CPU), checked as set_gdt checks it; copied when the vCPU starts.
    // gdt_frames[16] then gdt_ents; at most FIRST_RESERVED_GDT_PAGE frames are used.
    uint64_t gdt[17];
    static_assert(offsetof(vcpu_guest_context_t, gdt_ents) ==
                  offsetof(vcpu_guest_context_t, gdt_frames) + sizeof(vcpu_guest_context_t::gdt_frames));
    static_assert(sizeof(vcpu_guest_context_t::gdt_frames) == sizeof(uint64_t) * 16 && FIRST_RESERVED_GDT_PAGE <= 16);
    if (p.copy_from_guest(self, gdt, Vaddr{ctx_va + offsetof(vcpu_guest_context_t, gdt_frames)}, sizeof(gdt)))
        return -XEN_EFAULT;
    const uint64_t gdt_ents = gdt[16];
    if (long rc = vcpu_context_gdt_check(gdt_ents)) return rc;
    if (long rc = guest_gdt_check(*t.domain, gdt, uint32_t(gdt_ents))) return rc;
    // Last of the checks, as it changes t: a failure from here on leaves t
    // Down (initialise), never Initialised with part of a table.
    if (long rc = take_trap_table(self, t, ctx_va)) return rc;
    // The vCPU holds a type reference to its L4 and one to its user L4, as
    // NEW_BASEPTR and NEW_USER_BASEPTR take them; those of the L4s it had
    // before it went down are dropped.
    if (int rc = get_page_and_type(*core(), l4, t.domain->id, PageType::L4)) return rc;
    if (has_user) {
        if (int rc = get_page_and_type(*core(), user_l4, t.domain->id, PageType::L4)) {
            put_page_and_type(*core(), l4);
            return rc;
        }
    }
    if (t.has_table) put_page_and_type(*core(), t.guest_table);
    t.guest_table = l4;
    t.has_table = true;
    if (t.has_user_table) put_page_and_type(*core(), t.guest_table_user);
    t.guest_table_user = has_user ? user_l4 : Mfn{0};
    t.has_user_table = has_user;
    a.start_user = !in_kernel;

    // Xen's VGCF_failsafe_disables_events and VGCF_syscall_disables_events:
    // those callbacks mask event upcalls, as CALLBACKF_mask_events would.
    uint8_t masks = 0;
    if (w.flags & VGCF_failsafe_disables_events) masks |= 1u << CALLBACKTYPE_failsafe;
    if (w.flags & VGCF_syscall_disables_events) masks |= 1u << CALLBACKTYPE_syscall;
    // The callbacks only callback_op registers (NMI, syscall32, sysenter)
    // are not in the context: none, as for a vCPU never initialised, which
    // is the only kind Xen initialises.
    for (uint64_t& c : a.callback) c = 0;
    a.callback_masks = 0;
    set_callbacks(a, w.event, w.failsafe, w.syscall, masks);
    a.kernel_ss = no_stack ? 0 : kernel_stack_selector(w.stack[0]);
    a.kernel_sp = w.stack[1];
    // Xen's PV vCPU takes ctrlreg[2] as its CR2; the shared page's copy
    // (vcpu_info.arch.cr2) is left as it is, as Xen leaves it.
    a.cr2 = w.cr2;
    // The context's debugreg[] and ctrlreg[4] are not read (docs/abi.md
    // §12.3): the vCPU starts as a new one, whatever it had set before it
    // went down — no breakpoint armed, CR4.DE clear. Its virtual IOPL is
    // user_regs' RFLAGS.IOPL, as Xen's arch_set_info_guest takes it (Linux
    // gives its secondary CPUs IOPL 1 this way, in its PV SMP bring-up); the
    // RFLAGS the vCPU starts with never has IOPL set.
    a.dr = DebugRegs{};
    a.iopl = uint8_t((r.rflags & kRflagsIopl) >> 12);
    a.cr4_de = false;
    for (unsigned i = 0; i < FIRST_RESERVED_GDT_PAGE; ++i) a.start_gdt[i] = gdt[i];
    a.start_gdt_ents = uint32_t(gdt_ents);

    TrapFrame& f = a.start;
    f = TrapFrame{};
    f.r15 = r.r15, f.r14 = r.r14, f.r13 = r.r13, f.r12 = r.r12, f.r11 = r.r11, f.r10 = r.r10;
    f.r9 = r.r9, f.r8 = r.r8, f.rbp = r.rbp, f.rdi = r.rdi, f.rsi = r.rsi, f.rdx = r.rdx;
    f.rcx = r.rcx, f.rbx = r.rbx, f.rax = r.rax;
    f.rip = r.rip;
    f.cs = HV_SEL_GUEST_CS64;
    f.rflags = kRflagsIf | kRflagsFixed;
    f.rsp = r.rsp;
    f.ss = HV_SEL_GUEST_DS;
    a.fs_base = w.base[0], a.gs_base_kernel = w.base[1], a.gs_base_user = w.base[2];
    return 0;
}

} // namespace

long vcpu_up(Vcpu& t)
{
    VcpuState was = VcpuState::Initialised;
    static_assert(vcpu_up_starts(VcpuState::Initialised));
    if (!arch(t).state.compare_exchange_strong(was, VcpuState::Up, std::memory_order_acq_rel))
        return vcpu_up_check(was);
    guest_domain(t).nr_up.fetch_add(1, std::memory_order_acq_rel);
    PerCpu& c = g_cpus[t.cpu];
    c.next.store(&t, std::memory_order_release);
    lapic_send_fixed(c.apic_id, kVectorKick);
    return 0;
}

// vcpu_op(cmd, vcpuid, arg).
long do_vcpu_op(Vcpu& v, HypercallFrame& f)
{
    Domain& d = *v.domain;
    // An int cmd and an unsigned int vCPU in Xen's prototype: the arguments'
    // high halves are not looked at.
    const uint32_t cmd = uint32_t(f.arg[0]), id = uint32_t(f.arg[1]);
    if (long rc = vcpu_op_target_check(id, d.nr_vcpus)) return rc;   // Xen checks the vCPU first
    if (!arch_subop_known(__HYPERVISOR_vcpu_op, cmd)) return -XEN_ENOSYS;
    Vcpu& t = d.vcpus[id];
    switch (cmd) {
    case VCPUOP_initialise:
        return initialise(v, t, f.arg[2]);
    case VCPUOP_up:
        return vcpu_up(t);
    case VCPUOP_down:
        // Only the calling vCPU: its CPU goes idle. Its state is gone (it must
        // be initialised again), where Xen would resume it.
        if (long rc = vcpu_down_check(&t == &v)) return rc;
        // The last vCPU up going down: nothing can bring a vCPU of the
        // domain up again (only its own vCPUs can), so the domain shuts
        // down with poweroff, as Xen does, and the run can end.
        if (guest_domain(v).nr_up.fetch_sub(1, std::memory_order_acq_rel) == 1) guest_shutdown(SHUTDOWN_poweroff);
        runstate_change(v, RUNSTATE_offline);   // while its tables are loaded
        // Off the vCPU's tables before it is Down: once Down, another vCPU
        // may initialise it and drop the last reference to its old L4. Out of
        // the hypercall's section first: leave() may enter one of its own.
        section_leave();
        cli();
        cpu_leave_vcpu();
        arch(v).state.store(VcpuState::Down, std::memory_order_release);
        cpu_idle();
    case VCPUOP_is_up:
        return vcpu_is_up(arch(t).state.load(std::memory_order_acquire));
    case VCPUOP_get_runstate_info:
        return runstate_get(v, t, f.arg[2]);
    case VCPUOP_register_runstate_memory_area:
        return runstate_register(v, t, f.arg[2]);
    case VCPUOP_register_vcpu_info:
        return vcpu_info_register(v, t, f.arg[2]);
    case VCPUOP_set_periodic_timer:
    case VCPUOP_stop_periodic_timer:
    case VCPUOP_set_singleshot_timer:
    case VCPUOP_stop_singleshot_timer:
        return event_vcpu_timer_op(v, t, cmd, f.arg[2]);
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
