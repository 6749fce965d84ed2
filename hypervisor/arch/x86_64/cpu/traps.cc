// The C++ side of trap entry; see cpu/traps.h.
#include "cpu/traps.h"

#include "boot/exit.h"
#include "boot/selftest.h"
#include "cpu/descriptors.h"
#include "cpu/exceptions.h"
#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/shootdown.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "pv/debugreg.h"
#include "pv/domain.h"
#include "pv/emulate.h"
#include "pv/events.h"
#include "pv/guest_mode.h"
#include "pv/run.h"
#include "pv/traps.h"

namespace pvmmu::x86 {


namespace {

// Mnemonics of vectors 0-31 ("Exception and Interrupt Reference").
constexpr const char* kNames[kNrExceptions] = {
    "#DE divide error", "#DB debug", "NMI", "#BP breakpoint", "#OF overflow",
    "#BR bound range", "#UD invalid opcode", "#NM device not available", "#DF double fault",
    "coprocessor segment overrun", "#TS invalid TSS", "#NP segment not present",
    "#SS stack fault", "#GP general protection", "#PF page fault", "reserved",
    "#MF x87 error", "#AC alignment check", "#MC machine check", "#XM SIMD exception",
    "#VE virtualization exception", "#CP control protection", "reserved", "reserved",
    "reserved", "reserved", "reserved", "reserved", "#HV hypervisor injection",
    "#VC VMM communication", "#SX security exception", "reserved"};

[[noreturn]] void fatal(const TrapFrame& f)
{
    panic_printk("\nEXCEPTION on cpu %u: vector %lu (%s), error code 0x%lx\n", this_cpu_id(),
                 f.vector, exception_name(f.vector), f.error);
    panic_printk("  rip %016lx  cs %04lx  rflags %016lx\n", f.rip, f.cs, f.rflags);
    panic_printk("  rsp %016lx  ss %04lx  cr2 %016lx  cr3 %016lx\n", f.rsp, f.ss, read_cr2(),
                 read_cr3());
    panic_printk("  rax %016lx rbx %016lx rcx %016lx rdx %016lx\n", f.rax, f.rbx, f.rcx, f.rdx);
    panic_printk("  rsi %016lx rdi %016lx rbp %016lx\n", f.rsi, f.rdi, f.rbp);
    if (f.vector == kExcPF) {
        panic_printk("  page fault: %s, %s, %s%s%s\n", f.error & kPfPresent ? "protection" : "not present",
                     f.error & kPfWrite ? "write" : "read", f.error & kPfUser ? "user" : "supervisor",
                     f.error & kPfRsvd ? ", reserved bit" : "", f.error & kPfInstr ? ", instruction fetch" : "");
    }
    panic("unhandled exception %lu at rip 0x%lx", f.vector, f.rip);
}

// A held-over #DB (below) that landed on the #DB stub itself: the guest's
// INT1 (ICEBP, F1), which enters through vector 1 whatever the gate's DPL,
// came right after its MOV SS. The INT1's entry put the guest's RIP, CS,
// RFLAGS, RSP and SS at the top of the #DB IST stack, and the held-over #DB,
// delivered before the stub's first instruction on the same IST stack,
// wrote its own frame (the stub, in ring 0) over them. Resuming that entry
// would take the stub again on its own frame, forever (the CPU hung). The
// guest's other registers are intact in f, but where it was is lost: its
// domain is crashed, as nothing else could resume it.
[[noreturn]] void debug_over_debug_entry(const TrapFrame& f)
{
    asm volatile("mov %0, %%dr6" : : "r"(uint64_t(kDr6Default)));
    if (!this_vcpu()) fatal(f);   // only a guest's INT1 enters from ring 3
    guest_debug_unload();
    TrapFrame g = f;
    g.vector = kExcDB;
    g.rip = g.cs = g.rflags = g.rsp = g.ss = 0;   // overwritten: the stub's, not the guest's
    guest_crash(g, "a #DB on the #DB entry overwrote its frame (MOV SS, then INT1)");
}

// A #DB the guest's MOV SS held over the next instruction ("MOV SS and POP
// SS", SDM Vol. 3A 6.8.3; POP SS too, in compatibility mode, which a guest
// enters through a 32-bit code segment): with TF set (or a data breakpoint),
// a MOV SS followed by SYSCALL (either entry), INT3 or any instruction
// that faults delivers the #DB after that instruction, at the first
// instruction of the hypervisor's entry, in ring 0, on the guest's %gs and,
// for SYSCALL, on the guest's stack (the XSA-260 / CVE-2018-8897 class). #DB
// has its own IST stack, so the CPU never writes on the guest's; the trap is
// the guest's, not the hypervisor's: DR6 is cleared and the entry resumes on
// the guest's %gs; but on the #DB stub itself, which shares #DB's IST stack,
// the entry's frame is gone (debug_over_debug_entry). Any other #DB in ring
// 0 is the hypervisor's bug.
bool held_over_debug_trap(const TrapFrame& f)
{
    if ((f.vector & ~uint64_t(VECTOR_GUEST_GS)) != kExcDB) return false;
    if (f.rip == trap_stubs[kExcDB]) debug_over_debug_entry(f);
    bool entry = f.rip == reinterpret_cast<uint64_t>(&syscall_entry) ||
                 f.rip == reinterpret_cast<uint64_t>(&syscall32_entry);
    for (uint64_t stub : trap_stubs) entry |= f.rip == stub;
    if (!entry) return false;
    asm volatile("mov %0, %%dr6" : : "r"(uint64_t(kDr6Default)));
    return true;
}

// An entry from ring 0 that found the guest's %gs (cpu/trap_entry.S, which has
// swapped in this CPU's). Ring 0 runs on the guest's %gs only on the short,
// IF-clear paths between a ring change and its SWAPGS and inside
// load_gs_user_sel (cpu/trap_entry.S lists them), so this is the IRETQ of
// trap_return refusing the guest's frame (#GP, #NP or #SS), whose domain is
// crashed when it has no handler for the fault (refused_return_bounced), or an NMI or #MC on one of those paths, which is fatal. Either way the interrupted instruction cannot
// be resumed, as it would run on the hypervisor's %gs.
[[noreturn]] void entry_on_guest_gs(TrapFrame& f)
{
    f.vector &= ~uint64_t(VECTOR_GUEST_GS);
    const bool refused = f.vector == kExcNP || f.vector == kExcSS || f.vector == kExcGP;
    if (refused && f.rip == reinterpret_cast<uint64_t>(&trap_return_iretq) && this_vcpu()) {
        // f.rsp is where IRETQ read the guest's RIP, CS, RFLAGS, RSP and SS.
        const uint64_t* ret = reinterpret_cast<const uint64_t*>(f.rsp);
        TrapFrame g = f;
        g.rip = ret[0], g.cs = ret[1], g.rflags = ret[2], g.rsp = ret[3], g.ss = ret[4];
        guest_crash(g, "the CPU refused the return to the guest");
    }
    fatal(f);
}

// The IRETQ of trap_return refusing the guest's frame (#GP, #NP or #SS on
// the guest's %gs, as entry_on_guest_gs says): the fault is the guest's, at
// the frame it asked to return to (its RIP, its CS: an iret to a data
// segment), bounced to its handler with the CPU's error code, as Xen 4.17
// does (its IRETQ's fixup enters handle_exception with the guest's frame;
// xen_conform_guest). f becomes the handler's frame in ring 3, which
// trap_return enters on the guest's %gs (one SWAPGS: VECTOR_GUEST_GS
// cleared); false when there is no handler or its frame cannot be written.
bool refused_return_bounced(TrapFrame& f)
{
    const uint64_t vector = f.vector & ~uint64_t(VECTOR_GUEST_GS);
    const bool refused = vector == kExcNP || vector == kExcSS || vector == kExcGP;
    if (!refused || f.rip != reinterpret_cast<uint64_t>(&trap_return_iretq) || !this_vcpu()) return false;
    // f.rsp is where IRETQ read the guest's RIP, CS, RFLAGS, RSP and SS.
    const uint64_t* ret = reinterpret_cast<const uint64_t*>(f.rsp);
    TrapFrame g = f;
    g.vector = vector;
    g.rip = ret[0], g.cs = ret[1], g.rflags = ret[2], g.rsp = ret[3], g.ss = ret[4];
    if (!guest_bounce(g)) return false;
    f = g;
    return true;
}

// A ring-0 fault at an instruction of the fixup table (cpu/extable.h) resumes
// at its fixup.
bool ring0_fixup(TrapFrame& f)
{
    for (const uint64_t* e = hv_extable; e != hv_extable_end; e += 2)
        if (f.rip == e[0]) {
            f.rip = e[1];
            return true;
        }
    return false;
}

// An entry that found the PerCpu parked in IA32_KERNEL_GS_BASE by
// load_gs_user_sel (pv/segment_base.S) is the hypervisor's own code, not a
// ring change: the CPU refusing the guest's selector (#GP, #NP) resumes at
// the load's fixup, and trap_return parks the PerCpu again before the IRETQ.
// Anything else there (an NMI, #MC) stays fatal, on the right PerCpu.
bool parked_gs_load_refused(TrapFrame& f)
{
    const uint64_t vector = f.vector & ~uint64_t(VECTOR_GUEST_GS);
    if (vector != kExcNP && vector != kExcGP) return false;
    if (f.rip != reinterpret_cast<uint64_t>(load_gs_user_sel_load)) return false;
    return ring0_fixup(f);
}

} // namespace

static void dispatch_rest(TrapFrame* f);

// An entry that found the guest's %gs (cpu/trap_entry.S): true when
// trap_dispatch returns at once (trap_return gives the guest's %gs back).
// Out of line, so that the common entries' frame is not this path's.
[[gnu::noinline, gnu::cold]] static bool guest_gs_entry_returns(TrapFrame& f)
{
    if (held_over_debug_trap(f)) return true;
    if (parked_gs_load_refused(f)) return true;
    if (!refused_return_bounced(f)) entry_on_guest_gs(f);
    return false;
}

const char* exception_name(uint64_t vector)
{
    return vector < kNrExceptions ? kNames[vector] : "interrupt";
}

void guest_exit_checks(TrapFrame& f, uint8_t check)
{
    // Back to a guest whose domain has shut down meanwhile (guest_shutdown
    // kicks its CPUs, which marks the check due): this CPU idles instead.
    const Vcpu* v = this_vcpu();
    if (check && v && guest_domain_stopped(*v)) cpu_idle();
    // IRETQ raises #GP in ring 0 on a non-canonical RIP. A guest reaches one
    // by an instruction that ends at the top of the lower half (a SYSCALL at
    // 0x7ffffffffffe saves RIP 0x800000000000, and so does an interrupt
    // taken there), or by an iret frame (pv/traps.cc do_iret, which checks
    // none, as Xen): it gets the #GP the CPU would raise fetching there, at
    // that RIP, or its domain is crashed. Every other RIP the hypervisor
    // returns to (a handler, a vCPU's start) was checked.
    if (!canonical(Vaddr{f.rip})) {
        f.vector = kExcGP;
        f.error = 0;
        if (!guest_bounce(f)) guest_crash(f, "return to a non-canonical rip");
    }
    // As Xen's exit path: timers, the upcall; only where something may have
    // changed them (pv/events.h guest_return_check_due).
    if (check) guest_return_events(f, check);
}

// An entry from ring 0 (the hypervisor interrupted, or one of its own
// faults), out of line: true when the frame goes on to the guest in ring 3
// (refused_return_bounced), false when trap_dispatch returns at once.
[[gnu::noinline]] static bool hypervisor_trap(TrapFrame& f)
{
    // pv/events.h says when the return's check is needed: an interrupt
    // taken during a hypercall or in the idle loop marks it; a page fault on
    // a guest copy does not.
    if (f.vector != kExcPF) guest_return_check_due();
    if (f.vector & VECTOR_GUEST_GS) [[unlikely]] {
        if (guest_gs_entry_returns(f)) return false;
        return (f.cs & 3) == 3;
    }
    // A fault on guest_copy's access to guest memory resumes at its fixup,
    // which reports the bytes not copied (the copy returns -EFAULT); so does
    // load_gs_user_sel's segment load (#GP, or #NP for a descriptor not
    // present), which comes here only where the guest kernel's %gs base
    // equals the PerCpu's address (else parked_gs_load_refused).
    if ((f.vector == kExcPF || f.vector == kExcGP || f.vector == kExcNP) && ring0_fixup(f)) return false;
    dispatch_rest(&f);
    return false;
}

extern "C" void trap_dispatch(TrapFrame* f)
{
    if ((f->cs & 3) != 3) [[unlikely]] {
        if (!hypervisor_trap(*f)) return;
    } else if (f->vector == kExcPF) {
        // The guest's page faults go straight to their two ways: emulated (a
        // write to a write-protected page table) or bounced to the guest;
        // neither marks the return's check (pv/events.h). Only the guest's
        // kernel mode writes page tables the hypervisor emulates
        // (guest_emulate_page_fault): user mode's faults (a copy-on-write
        // one among them) go to the bounce without the call.
        if (guest_in_user_mode(*this_vcpu()) || !guest_emulate_page_fault(*f))
            if (!guest_bounce(*f)) guest_crash(*f, "exception in the guest");
    } else {
        guest_return_check_due();
        dispatch_rest(f);
    }
    guest_exit(*f);
}

// Every other vector, from either ring: out of line, as guest_gs_entry_returns.
[[gnu::noinline]] static void dispatch_rest(TrapFrame* f)
{
    switch (f->vector) {
    case VECTOR_SYSCALL32:
        if (!guest_syscall32(*f)) guest_crash(*f, "syscall from compatibility mode");
        return;
    case kVectorShootdown:
        shootdown_serve();
        lapic_eoi();
        return;
    case kVectorKick:   // cpu_idle, block_wait and the return to a guest look again
        lapic_eoi();
        return;
    case kVectorTimer:   // the work is done on the way out (pv/event_delivery.cc)
        lapic_timer_fired();
        lapic_eoi();
        return;
    case kVectorSpurious:   // no EOI for the spurious vector ("Spurious Interrupt")
        return;
    default:
        if ((f->cs & 3) == 3) {
            if (f->vector == kExcDB) selftest_guest_debug();
            // What Xen emulates for a PV kernel first (pv/emulate.cc), then its handler.
            if (!guest_emulate(*f) && !guest_bounce(*f)) guest_crash(*f, "exception in the guest");
            return;
        }
        if (guest_debug_in_hypervisor(*f)) return;   // a guest's data breakpoint, hit by a copy
        fatal(*f);
    }
}

} // namespace pvmmu::x86
