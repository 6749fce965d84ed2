// The guest's virtual IDT (docs/design.md §5; Xen's x86-64 PV trap ABI, docs/abi.md
// §10): set_trap_table, the bounce of an exception to the guest's handler,
// the iret hypercall that returns from it, and the registrations a PV kernel
// makes at start of day (set_callbacks / callback_op, stack_switch).
//
// The guest kernel and its user mode both run in ring 3 (pv/guest_mode.h).
// A bounce from kernel mode stays on the interrupted stack: the frame goes
// below the interrupted RSP (aligned to 16 as the CPU does). One from user
// mode first switches the vCPU to kernel mode (its L4 and %gs base) and puts
// the frame on the kernel stack stack_switch named, as Xen's
// create_bounce_frame. The frame is laid out as Xen lays it out — from the
// lowest address: RCX, R11, [error code], RIP, CS, RFLAGS, RSP, SS. The
// handler pops RCX and R11 and ends with the iret hypercall, whose stub
// pushes RAX, R11, RCX on top of (flags, RIP, CS, RFLAGS, RSP, SS): that is
// struct iret_context (<xen/arch-x86/xen-x86_64.h>).
#include <pvmmu/abi.h>

#include "core/pte.h"
#include "cpu/cpu_bits.h"
#include "cpu/entry_defs.h"
#include "cpu/exceptions.h"
#include "cpu/percpu.h"
#include "cpu/selectors.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/platform.h"
#include "pv/domain.h"
#include "pv/events.h"
#include "pv/guest_mode.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/surface.h"
#include "pv/traps.h"
#include "pv/vcpu_info.h"

namespace pvmmu::x86 {

namespace {

// RFLAGS a guest may set through iret: CF PF AF ZF SF TF DF OF RF AC ID. IF
// is always on, bit 1 always set; IOPL, NT, VM, VIF, VIP never. RF, as on
// Xen, lets a #DB handler return to the instruction its instruction
// breakpoint stopped at (pv/debugreg.cc) without hitting it again.
constexpr uint64_t kGuestRflags =
    RFLAGS_CF | RFLAGS_PF | RFLAGS_AF | RFLAGS_ZF | RFLAGS_SF | RFLAGS_TF | RFLAGS_DF | RFLAGS_OF | RFLAGS_RF |
    RFLAGS_AC | RFLAGS_ID;
constexpr uint64_t kRflagsIf = RFLAGS_IF, kRflagsFixed = RFLAGS_FIXED, kRflagsDf = RFLAGS_DF;
// What a bounce clears in the handler's RFLAGS (deliver_to).
constexpr uint64_t kBounceClears = RFLAGS_TF | RFLAGS_RF | RFLAGS_NT | RFLAGS_VM | RFLAGS_AC;

// The copies to and from the guest as direct calls (mm/core_glue.h bare_metal).
BareMetal& platform() { return bare_metal(); }

} // namespace

TrapEntry trap_entry(const trap_info_t& t) { return TrapEntry{t.address, uint8_t(t.flags & 3), TI_GET_IF(&t) != 0}; }

void set_callbacks(VcpuArch& a, uint64_t event, uint64_t failsafe, uint64_t syscall, uint8_t masks)
{
    a.callback[CALLBACKTYPE_event] = event;
    a.callback[CALLBACKTYPE_failsafe] = failsafe;
    a.callback[CALLBACKTYPE_syscall] = syscall;
    constexpr uint8_t kThese = 1u << CALLBACKTYPE_failsafe | 1u << CALLBACKTYPE_syscall;
    a.callback_masks = uint8_t((a.callback_masks & ~kThese) | (masks & kThese));
}

// The kernel stack's SS: any is taken, its RPL forced to 3, as Xen does:
// Linux names its own __KERNEL_DS (0x18). A 64-bit guest's kernel runs on
// FLAT_KERNEL_SS whatever it named (Xen's bounce loads that one too), so only
// the SP (checked by kernel_stack_ok, core/callback_rules.h) is used
// (deliver_to).
uint16_t kernel_stack_selector(uint64_t ss) { return uint16_t(ss) | 3; }

namespace {
// Inline into each caller (an exception's bounce: once per copy-on-write fault).
[[gnu::always_inline]] inline bool deliver_to(Vcpu& v, vcpu_info* info, TrapFrame& f, uint64_t handler,
                                              unsigned vector, bool error_code, bool masked);

// `info`: the vCPU's vcpu_info (guest_vcpu_info), read once per delivery.
void mask_upcalls(vcpu_info* info)
{
    if (info) __atomic_store_n(&info->evtchn_upcall_mask, uint8_t(1), __ATOMIC_SEQ_CST);
}

// Whether v's event upcalls are masked, read once from the guest-writable
// vcpu_info (another vCPU of the guest may change it at any time); without a
// vcpu_info, as the frame's IF says.
bool upcalls_masked(const vcpu_info* info, uint64_t rflags)
{
    if (!info) return !(rflags & kRflagsIf);
    return __atomic_load_n(&info->evtchn_upcall_mask, __ATOMIC_SEQ_CST);
}

// Inline into guest_deliver and guest_bounce's two ways.
[[gnu::always_inline]] inline bool deliver_exception(Vcpu& v, TrapFrame& f, unsigned vector, bool error_code)
{
    const TrapEntry& t = arch(v).trap[vector];
    if (!t.address) return false;
    vcpu_info* const info = guest_vcpu_info(v);
    if (!deliver_to(v, info, f, t.address, vector, error_code, upcalls_masked(info, f.rflags))) return false;
    if (t.mask_events) mask_upcalls(info);
    return true;
}
} // namespace

bool guest_deliver(TrapFrame& f, unsigned vector, bool error_code)
{
    return deliver_exception(*this_vcpu(), f, vector, error_code);
}

bool guest_bounce(TrapFrame& f)
{
    // NMI, #DF and #MC are the hypervisor's; nothing else is delivered twice.
    if (f.vector >= kNrExceptions || f.vector == kExcNMI || f.vector == kExcDF || f.vector == kExcMC) return false;
    Vcpu& v = *this_vcpu();
    const uint64_t cpu_error = f.error;
    if (f.vector == kExcPF) {
        // Xen gives a page fault of the guest's kernel mode the U/S bit clear
        // and one of its user mode the bit set, whatever ring the CPU saw. Not
        // delivered, the frame keeps the CPU's code for the crash report (the
        // U/S bit is evidence). The page fault's own copy of the delivery
        // (every copy-on-write fault of a fork): its vector and error code
        // constants.
        f.error = guest_in_user_mode(v) ? f.error | kPfUser : f.error & ~kPfUser;
        if (deliver_exception(v, f, kExcPF, true)) return true;
    } else if (deliver_exception(v, f, unsigned(f.vector), exception_has_error_code(unsigned(f.vector)))) {
        return true;
    }
    f.error = cpu_error;
    return false;
}

// Xen's return-to-guest check for events, after a hypercall: with
// evtchn_upcall_pending set and evtchn_upcall_mask clear, a bounce to the
// event callback (frame without error code), the upcall then masked; the
// callback's iret restores the mask from the frame's RFLAGS.IF (do_iret).
// An event callback of 0 is none: the event waits. A frame that cannot be
// written crashes the domain, as Xen's failed bounce does.
void guest_upcall(TrapFrame& f)
{
    Vcpu& v = *this_vcpu();
    const uint64_t cb = arch(v).callback[CALLBACKTYPE_event];
    vcpu_info* info = guest_vcpu_info(v);
    // A non-canonical RIP is the #GP's to report first; the event follows on
    // that handler's iret.
    if (!cb || !info || !canonical(Vaddr{f.rip})) return;
    if (!__atomic_load_n(&info->evtchn_upcall_pending, __ATOMIC_SEQ_CST) ||
        __atomic_load_n(&info->evtchn_upcall_mask, __ATOMIC_SEQ_CST))
        return;
    // The frame records the mask as it was read here: unmasked.
    if (!deliver_to(v, info, f, cb, kNrExceptions, false, false))
        guest_crash(f, "event callback: the bounce frame cannot be written");
    mask_upcalls(info);
}

namespace {

// SYSCALL bounced to the guest's callback of `type` (CALLBACKTYPE_syscall or
// _syscall32), as Xen's switch_to_kernel: the frame of an event without error
// code (RCX and R11 as SYSCALL left them; CS and SS the entry's, Xen's
// FLAT_KERNEL_CS64 / FLAT_RING3_CS32 and FLAT_KERNEL_SS), upcalls masked when
// the callback was registered with CALLBACKF_mask_events, DF cleared.
bool syscall_callback(Vcpu& v, TrapFrame& f, unsigned type)
{
    VcpuArch& a = arch(v);
    vcpu_info* const info = guest_vcpu_info(v);
    if (!deliver_to(v, info, f, a.callback[type], VECTOR_SYSCALL, false, upcalls_masked(info, f.rflags))) return false;
    if (a.callback_masks & (1u << type)) mask_upcalls(info);
    f.rflags &= ~kRflagsDf;
    return true;
}

// SYSCALL with no callback to take it, as Xen 4.17's switch_to_kernel: a #UD
// at the SYSCALL (RIP back over its 2 bytes, 0F 05) from the mode it ran in,
// to the trap table's #UD handler, which runs with DF clear: Xen 4.17 clears
// it after this bounce as after a syscall callback's (xen_conform_guest
// shows it). False: no handler either (the caller crashes the domain, as
// Xen's bounce to address 0 does).
bool syscall_ud(TrapFrame& f, uint64_t rip)
{
    f.vector = kExcUD;
    f.error = 0;
    f.rip = rip;
    if (!guest_bounce(f)) return false;
    f.rflags &= ~kRflagsDf;
    return true;
}

} // namespace

// SYSCALL from the guest's user mode: its system call, never a hypercall
// (Xen's lstar_enter: only kernel mode's SYSCALL is one), to the syscall
// callback on the kernel stack; without one, #UD (syscall_ud), as Xen 4.17
// does since its "inject #UD for missing SYSCALL callbacks": a guest kernel
// that registered none sees an invalid instruction, not the end of its
// domain. The upcall follows on the return to the guest
// (guest_return_events), as after a hypercall.
void guest_user_syscall(TrapFrame& f)
{
    Vcpu& v = *this_vcpu();
    if (!arch(v).callback[CALLBACKTYPE_syscall]) {
        if (!syscall_ud(f, f.rip - 2)) guest_crash(f, "syscall from user mode: no syscall callback, no #UD handler");
        return;
    }
    if (!syscall_callback(v, f, CALLBACKTYPE_syscall))
        guest_crash(f, "syscall from user mode: the bounce frame cannot be written");
}

// SYSCALL from compatibility mode (syscall32_entry), as Xen 4.17 bounces it
// for a 64-bit PV guest: to the syscall32 callback (CALLBACKTYPE_syscall32)
// with the frame of an event without error code (RCX and R11 as SYSCALL left
// them, CS FLAT_RING3_CS32), or, without one, a #UD at the SYSCALL
// (syscall_ud; compatibility mode: a 32-bit RIP). False: neither could be
// delivered (the caller crashes the domain).
bool guest_syscall32(TrapFrame& f)
{
    Vcpu& v = *this_vcpu();
    if (arch(v).callback[CALLBACKTYPE_syscall32]) return syscall_callback(v, f, CALLBACKTYPE_syscall32);
    return syscall_ud(f, uint32_t(f.rip - 2));
}

namespace {

// `masked`: the upcall mask the frame's RFLAGS.IF records (Xen's
// create_bounce_frame: IF = !evtchn_upcall_mask, since a PV guest always runs
// with the CPU's IF set); iret turns it back into the mask. From user mode
// the vCPU enters kernel mode first and the frame goes on its kernel stack;
// if it cannot be written there the vCPU is left in user mode, as it was.
inline bool deliver_to(Vcpu& v, vcpu_info* info, TrapFrame& f, uint64_t handler, unsigned vector,
                       bool error_code, bool masked)
{
    const bool from_user = guest_in_user_mode(v);
    if (from_user) guest_enter_kernel_mode(v);
    const uint64_t stack = from_user ? arch(v).kernel_sp : f.rsp;

    // A #PF the CPU raised (never an INT $14) sets the virtual CR2, as Xen's.
    const bool page_fault = vector == kExcPF && error_code;
    if (page_fault) {
        arch(v).cr2 = read_cr2();
        if (info) info->arch.cr2 = arch(v).cr2;
    }

    uint64_t frame[8];
    unsigned n = 0;
    frame[n++] = f.rcx;
    frame[n++] = f.r11;
    if (error_code) frame[n++] = f.error;
    frame[n++] = f.rip;
    // RPL 0 in the frame's CS says "kernel context" (Xen clears it for an
    // event in the guest's kernel mode and keeps the RPL 3 of user mode's):
    // Linux's entry code tells kernel from user mode by it. iret takes RPL 0
    // back to kernel mode and RPL 3 to user mode (do_iret).
    frame[n++] = from_user ? f.cs : f.cs & ~3ull;
    frame[n++] = masked ? f.rflags & ~kRflagsIf : f.rflags | kRflagsIf;
    frame[n++] = f.rsp;
    frame[n++] = f.ss;
    const uint64_t sp = (stack & ~15ull) - n * sizeof(uint64_t);
    if (platform().copy_to_guest(v, Vaddr{sp}, frame, n * sizeof(uint64_t))) {
        if (from_user) guest_enter_user_mode(v);
        return false;
    }
    if (page_fault) arch(v).counters.faults.fetch_add(1, std::memory_order_relaxed);
    f.rip = handler;
    f.rsp = sp;
    f.cs = HV_SEL_GUEST_CS64;
    f.ss = HV_SEL_GUEST_DS;
    // The handler's RFLAGS, as Xen's create_bounce_frame leaves them: TF,
    // RF, NT and VM clear, as the CPU clears them delivering an event (NT
    // and VM are never in kGuestRflags), and AC clear too. The CPU runs
    // every guest with CR0.AM set (boot/boot32.S), as Xen does, so a guest's
    // AC turns on alignment checking in ring 3; the guest's kernel, in ring 3
    // as well, must not take the #AC of an AC its user program set. AC gives
    // ring-3 code nothing else: SMAP's AC exemption is for supervisor
    // accesses only, and every entry to the hypervisor clears AC before its
    // C code runs (IA32_FMASK for SYSCALL, cpu/entry_defs.h; SMAP_CLOSE in
    // cpu/trap_entry.S), so a guest's AC never opens its pages to ring 0.
    f.rflags = (f.rflags & kGuestRflags & ~kBounceClears) | kRflagsIf | kRflagsFixed;
    return true;
}

} // namespace

// set_trap_table(const trap_info_t* list), with Xen's semantics: each entry
// replaces its vector's (handler and DPL, TI_GET_DPL), one at a time as it is
// read, up to the first whose address is 0; the other vectors keep theirs. A
// NULL list clears every vector. An error stops the list where it is (the
// entries before stay, as on Xen): a handler that is not a guest address
// -EINVAL (Xen checks only that it is canonical), an unreadable entry
// -EFAULT. Xen sets no bound on the list; so that no call holds the CPU
// unboundedly, it continues (a continuation, direct or in a multicall) every
// kTrapBatch entries.
HcResult do_set_trap_table(Vcpu& v, HypercallFrame& f)
{
    constexpr unsigned kTrapBatch = 64;
    VcpuArch& a = arch(v);
    if (!f.arg[0]) {
        for (TrapEntry& t : a.trap) t = TrapEntry{};
        return done(0);
    }
    uint64_t list = f.arg[0];
    for (unsigned i = 0; i < kTrapBatch; ++i, list += sizeof(trap_info_t)) {
        trap_info_t t;
        if (platform().copy_from_guest(v, &t, Vaddr{list}, sizeof(t))) return done(-XEN_EFAULT);
        if (t.address == 0) return done(0);
        if (!trap_entry_ok(t)) return done(-XEN_EINVAL);
        a.trap[t.vector] = trap_entry(t);
    }
    f.arg[0] = list;   // what is left
    return preempted();   // the multicall or syscall_dispatch issues it again
}

// iret: the frame is struct iret_context at the guest's RSP. RIP and RSP
// are not checked, as on Xen: a non-canonical RIP is a #GP(0) at that RIP
// (cpu/traps.cc, as the CPU raises it), one in the hypervisor's range faults
// at the guest's first fetch (a #PF the guest takes), so a user program's bad signal frame is its own kernel's fault to
// handle, not the domain's end. CS and SS are any selectors, their RPL forced to
// 3, as on Xen (Linux returns to user mode on its own GDT's __USER_CS and
// __USER_DS; a 32-bit code segment, or FLAT_RING3_CS32, returns to
// compatibility mode). The CPU's checks at the IRETQ do the rest: a selector
// that is not a present DPL-3 segment of the right kind, or a RIP past its
// limit, is refused there and the fault bounced to the guest's handler at
// that frame, as Xen 4.17 does, or the domain crashed without one
// (cpu/traps.cc). A bad frame here crashes the domain, as Xen does for one
// it cannot read. A CS with RPL 3 in the frame is a return to the guest's
// user mode (Xen's do_iret), which needs a user L4 (else the domain is
// crashed, as on Xen); the switch is made once the call ends
// (user_mode_next), so the rest of a multicall still writes kernel memory
// through the kernel's L4. RAX comes back from the frame; R11 and RCX too,
// unless the frame's flags say VGCF_in_syscall: Xen then returns by SYSRET,
// which leaves RIP in RCX and RFLAGS in R11, with STAR's flat selectors
// (FLAT_RING3_CS32 for a 32-bit return, else FLAT_RING3_CS64, and
// FLAT_RING3_SS); the same registers come back here. The other registers are
// as the guest left them.
// The frame is the guest's registers, not the call's arguments (it takes
// none): inside a multicall too, where it is the last entry run (Xen's
// mc_exit).
HcResult do_iret(Vcpu& v, HypercallFrame&)
{
    TrapFrame& f = guest_regs();
    iret_context ctx;
    if (platform().copy_from_guest(v, &ctx, Vaddr{f.rsp}, sizeof(ctx))) guest_crash(f, "iret: unreadable frame");
    const bool to_user = (ctx.cs & 3) == 3;
    if (to_user && !v.has_user_table) guest_crash(f, "iret to user mode without user page tables");
    f.rip = ctx.rip;
    f.cs = uint16_t(ctx.cs) | 3;
    f.rflags = (ctx.rflags & kGuestRflags) | kRflagsIf | kRflagsFixed;
    f.rsp = ctx.rsp;
    f.ss = uint16_t(ctx.ss) | 3;
    if (ctx.flags & VGCF_in_syscall) {
        f.cs = uint16_t(ctx.cs) == FLAT_RING3_CS32 ? HV_SEL_GUEST_CS32 : HV_SEL_GUEST_CS64;
        f.ss = HV_SEL_GUEST_DS;
        f.rcx = f.rip;
        f.r11 = f.rflags;
    } else {
        f.r11 = ctx.r11;
        f.rcx = ctx.rcx;
    }
    arch(v).user_mode_next = to_user;
    // The upcall mask from the frame's IF, as Xen's do_iret: an event
    // pending and now unmasked is delivered on this return. The return
    // looks for it only when this unmasks one already pending (pv/events.h):
    // the pending bit read after the mask's store, so an event raised before
    // the read is seen here, and one raised after it comes with its kick.
    if (vcpu_info* info = guest_vcpu_info(v)) {
        const bool masked = !(ctx.rflags & kRflagsIf);
        __atomic_store_n(&info->evtchn_upcall_mask, uint8_t(masked), __ATOMIC_SEQ_CST);
        if (!masked && __atomic_load_n(&info->evtchn_upcall_pending, __ATOMIC_SEQ_CST))
            guest_return_check_due(kCheckUpcall);
    }
    return ends_multicall(long(ctx.rax));   // syscall_dispatch puts it in RAX
}

namespace {

// CALLBACKF_mask_events is taken for the failsafe, syscall, syscall32 and
// sysenter callbacks, and ignored for the event and NMI ones
// (<xen/callback.h>: the event callback always masks).
long register_callback(Vcpu& v, unsigned type, uint64_t address, uint16_t flags = 0)
{
    if (type >= 8 || type == CALLBACKTYPE_sysenter_deprecated) return -XEN_EINVAL;
    if (address && !guest_va_ok(address)) return -XEN_EINVAL;
    VcpuArch& a = arch(v);
    a.callback[type] = address;
    const uint8_t bit = uint8_t(1u << type);
    a.callback_masks = (flags & CALLBACKF_mask_events) ? a.callback_masks | bit : a.callback_masks & ~bit;
    return 0;
}

// Xen 4.17 unregisters only the NMI callback (xen_conform_guest): the
// callbacks a guest cannot run without are -EINVAL, the types it does not
// know -ENOSYS (sysenter_deprecated and sfmask among them).
long unregister_callback(Vcpu& v, unsigned type)
{
    switch (type) {
    case CALLBACKTYPE_nmi: return register_callback(v, type, 0);
    case CALLBACKTYPE_event: case CALLBACKTYPE_failsafe: case CALLBACKTYPE_syscall: case CALLBACKTYPE_sysenter:
    case CALLBACKTYPE_syscall32: return -XEN_EINVAL;
    default: return -XEN_ENOSYS;
    }
}

} // namespace

// set_callbacks(event, failsafe, syscall): recorded, checked, none masking
// events beyond the event callback's own (Xen registers them without
// flags); the event callback is called by guest_upcall, the failsafe one
// never: Xen calls it when it cannot load a guest's data segments on a
// context switch, which pvmmu never does (a vCPU owns its CPU), and bounces
// a refused IRETQ as the fault (cpu/traps.cc).
long do_set_callbacks(Vcpu& v, HypercallFrame& f)
{
    if (!callbacks_ok(f.arg[0], f.arg[1], f.arg[2])) return -XEN_EINVAL;
    set_callbacks(arch(v), f.arg[0], f.arg[1], f.arg[2]);
    return 0;
}

// callback_op(CALLBACKOP_register | CALLBACKOP_unregister, arg).
long do_callback_op(Vcpu& v, HypercallFrame& f)
{
    const uint32_t cmd = uint32_t(f.arg[0]);   // an int in Xen's prototype
    if (!arch_subop_known(__HYPERVISOR_callback_op, cmd)) return -XEN_ENOSYS;
    if (cmd == CALLBACKOP_register) {
        callback_register_t r;
        if (platform().copy_from_guest(v, &r, Vaddr{f.arg[1]}, sizeof(r))) return -XEN_EFAULT;
        return r.address ? register_callback(v, r.type, r.address, r.flags) : -XEN_EINVAL;
    }
    if (cmd == CALLBACKOP_unregister) {
        callback_unregister_t u;
        if (platform().copy_from_guest(v, &u, Vaddr{f.arg[1]}, sizeof(u))) return -XEN_EFAULT;
        return unregister_callback(v, u.type);
    }
    return -XEN_ENOSYS;
}

// stack_switch(ss, sp): the kernel stack a bounce from guest user mode
// starts on (deliver_to), checked (kernel_stack_ok).
long do_stack_switch(Vcpu& v, HypercallFrame& f)
{
    if (!kernel_stack_ok(f.arg[1])) return -XEN_EINVAL;
    arch(v).kernel_ss = kernel_stack_selector(f.arg[0]);
    arch(v).kernel_sp = f.arg[1];
    return 0;
}

} // namespace pvmmu::x86
