// The C++ side of trap entry; see arch/traps.h.
#include "arch/traps.h"

#include "arch/console.h"
#include "arch/exit.h"
#include "arch/guest.h"
#include "arch/lapic.h"
#include "arch/percpu.h"
#include "arch/shootdown.h"
#include "arch/x86.h"

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
    if (f.vector == 14) {
        // Page-fault error code bits ("Page-Fault Exceptions"): P, W/R, U/S, RSVD, I/D.
        panic_printk("  page fault: %s, %s, %s%s%s\n", f.error & 1 ? "protection" : "not present",
                     f.error & 2 ? "write" : "read", f.error & 4 ? "user" : "supervisor",
                     f.error & 8 ? ", reserved bit" : "", f.error & 16 ? ", instruction fetch" : "");
    }
    panic("unhandled exception %lu at rip 0x%lx", f.vector, f.rip);
}

} // namespace

static void dispatch(TrapFrame* f);

const char* exception_name(uint64_t vector)
{
    return vector < kNrExceptions ? kNames[vector] : "interrupt";
}

extern "C" void trap_dispatch(TrapFrame* f)
{
    dispatch(f);
    // Back to a guest whose domain has shut down meanwhile (guest_shutdown
    // kicks its CPUs): this CPU idles instead.
    const Vcpu* v = this_cpu().vcpu;
    if ((f->cs & 3) == 3 && v && guest_domain_stopped(*v)) cpu_idle();
}

static void dispatch(TrapFrame* f)
{
    if (f->vector == VECTOR_SYSCALL) {
        sti();   // shootdown IPIs may arrive during a hypercall
        syscall_dispatch(f);
        cli();
        return;
    }
    // A fault on guest_copy's access to guest memory resumes at its fixup,
    // which reports the bytes not copied (the copy returns -EFAULT).
    if ((f->vector == 14 || f->vector == 13) && (f->cs & 3) == 0)
        for (const uint64_t* e = guest_copy_extable; e != guest_copy_extable_end; e += 2)
            if (f->rip == e[0]) {
                f->rip = e[1];
                return;
            }
    switch (f->vector) {
    case kVectorShootdown:
        shootdown_serve();
        lapic_eoi();
        return;
    case kVectorKick:   // cpu_idle looks for its vCPU once the interrupt returns
        lapic_eoi();
        return;
    case kVectorSpurious:   // no EOI for the spurious vector ("Spurious Interrupt")
        return;
    default:
        if ((f->cs & 3) == 3 && !guest_bounce(*f)) guest_crash(*f, "exception in the guest");
        if ((f->cs & 3) == 3) return;
        fatal(*f);
    }
}

void raise_test_exception() { asm volatile("ud2"); }

namespace {
[[gnu::noinline]] uint64_t recurse(uint64_t depth)
{
    volatile uint8_t frame[512];
    frame[0] = uint8_t(depth);
    if (depth == ~0ull) return 0;   // never: keeps the recursion from looking infinite
    return recurse(depth + 1) + frame[0];
}
} // namespace

void overflow_stack() { (void)recurse(0); }

} // namespace pvmmu::x86
