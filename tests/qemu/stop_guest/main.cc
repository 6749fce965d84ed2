// A domain's vCPUs stop with it: booted twice (tests/qemu/tests.cmake).
// With "role=spin" on its command line (start_info.cmd_line) the domain
// starts its vCPU 1, which prints "stop guest: spinning" forever, and shuts
// down from vCPU 0 once it has seen vCPU 1 run. With "role=wait" the other
// domain yields for about 8e9 TSC ticks (seconds: long after the
// spinner's domain is gone), prints "stop guest: waited" and powers off. The QEMU test counts the spinner's lines after the first domain's
// shutdown: its vCPU 1 must have stopped (at most one line in flight).
// With "role=down" (2 vCPUs, one domain) vCPU 1 is started and goes down
// itself, which leaves the domain running on vCPU 0; then vCPU 0, the last
// vCPU up, goes down: the domain must shut down (poweroff), not hang. vCPU 1
// starts with the %fs and %gs bases of its context (VCPUOP_initialise's
// fs_base, gs_base_kernel) and reads through them before it goes down.
// With "role=code", SCHEDOP_shutdown_code(reboot) then SCHEDOP_shutdown
// (poweroff): the domain must end with reboot; with "role=watchdog", a
// 1-second SCHEDOP_watchdog never re-armed while the guest spins without a
// hypercall or any timer of its own: it must end with watchdog (the CPU's
// timer is armed for the watchdog's deadline too). With "role=smp_watchdog"
// (2 vCPUs) vCPU 1 stops its own periodic timer and spins without a
// hypercall; vCPU 0 sets a 1-second watchdog, then goes down: only vCPU 1's
// CPU is left to see the deadline, which another vCPU moved (the kick of
// pv/watchdog.cc): the domain must end with watchdog, by vCPU 1.
// VCPUOP_initialise takes the trap table from the context (trap_ctxt[], as
// Linux brings up its CPUs, no set_trap_table on vCPU 1): vCPU 1's INT $0x80
// reaches the context's handler for 0x80 the first time; brought up again
// with a context with no entry for 0x80, the same INT raises #GP (the old
// handler is gone), and its CR2 is the context's ctrlreg[2]. Before that, a
// context with a bad trap entry, callback or kernel stack is refused with
// -EINVAL and leaves vCPU 1 down, needing an initialise (docs/abi.md §10).
#include "tiny_guest.h"

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image

extern "C" HIDDEN char stop_int80_entry[], stop_gp_entry[];
extern "C" HIDDEN [[noreturn]] void stop_on_trap(uint64_t vector, uint64_t error);

// vCPU 1's handlers: no return, so no iret; the stack aligned for the C
// function, which goes down. The #GP frame is RCX, R11, error code, ...
asm(R"(
    .pushsection .text
    .globl stop_int80_entry, stop_gp_entry
    .hidden stop_int80_entry, stop_gp_entry
stop_int80_entry:
    mov $0x80, %edi
    xor %esi, %esi
    jmp 1f
stop_gp_entry:
    mov $13, %edi
    mov 16(%rsp), %rsi
1:  and $-16, %rsp
    call stop_on_trap
    ud2
    .popsection
)");

namespace {

alignas(16) uint8_t g_stack[16384];
volatile bool g_spinning = false;
uint64_t g_fs_word = 0x0123456789abcdef, g_gs_word = 0xfedcba9876543210;
volatile uint64_t g_seen_fs = 0, g_seen_gs = 0;   // what vCPU 1 read through %fs:0 and %gs:0
volatile uint64_t g_seen_cr2 = 1;                 // what vCPU 1 read from %cr2 (emulated)
volatile uint64_t g_vector = 0, g_error = 0;      // the handler vCPU 1's INT $0x80 reached
constexpr uint64_t kCr2 = 0x0000123456789000;     // the second context's ctrlreg[2]

[[noreturn]] void vcpu1_down()
{
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 1, 0);
    write("stop guest: FAILED: vCPU 1 came back from VCPUOP_down\n");
    for (;;) {
    }
}

uint64_t read_cr2()
{
    uint64_t v;
    asm volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}

[[noreturn]] void down()
{
    uint64_t fs, gs;
    asm volatile("mov %%fs:0, %0; mov %%gs:0, %1" : "=r"(fs), "=r"(gs));
    g_seen_fs = fs;
    g_seen_gs = gs;
    g_seen_cr2 = read_cr2();
    asm volatile("int $0x80" ::: "memory");
    write("stop guest: FAILED: vCPU 1's INT $0x80 came back\n");
    vcpu1_down();
}

// vCPU 1 brought up a second time.
[[noreturn]] void again()
{
    g_seen_cr2 = read_cr2();
    asm volatile("int $0x80" ::: "memory");
    write("stop guest: FAILED: vCPU 1's second INT $0x80 came back\n");
    vcpu1_down();
}

long initialise(const vcpu_guest_context_t& ctx)
{
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx));
}

// Each refused context: -EINVAL (set_trap_table's, set_callbacks' and
// stack_switch's checks), and vCPU 1 still needs an initialise — also after
// a successful one, since a refused context may have been taken in part.
void refusals(vcpu_guest_context_t& ctx)
{
    constexpr uint64_t kNonCanonical = 0x0000800000000000, kHypervisor = 0xffff828000000000;
    ctx.trap_ctxt[6] = trap_info_t{6, 0, FLAT_RING3_CS64, kNonCanonical};
    check("initialise with a non-canonical trap handler", initialise(ctx), -XEN_EINVAL);
    ctx.trap_ctxt[6] = trap_info_t{};
    ctx.trap_ctxt[255] = trap_info_t{255, 3, FLAT_RING3_CS64, kHypervisor};
    check("initialise with a trap handler in the hypervisor's slots", initialise(ctx), -XEN_EINVAL);
    ctx.trap_ctxt[255] = trap_info_t{};
    ctx.event_callback_eip = kNonCanonical;
    check("initialise with a non-canonical event callback", initialise(ctx), -XEN_EINVAL);
    ctx.event_callback_eip = 0, ctx.syscall_callback_eip = kHypervisor;
    check("initialise with a syscall callback in the hypervisor's slots", initialise(ctx), -XEN_EINVAL);
    ctx.syscall_callback_eip = 0;
    const uint64_t sp = ctx.kernel_sp;
    // Any kernel_ss is taken, its RPL forced to 3, as Xen does (stack_switch).
    ctx.kernel_ss = FLAT_KERNEL_SS, ctx.kernel_sp = kNonCanonical;
    check("initialise with a non-canonical kernel_sp", initialise(ctx), -XEN_EINVAL);
    ctx.kernel_sp = sp;
    check("vCPU 1 still down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);
    check("up after refused contexts", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), -XEN_EINVAL);
    check("initialise with the good context", initialise(ctx), 0);
    ctx.trap_ctxt[200] = trap_info_t{200, 3, FLAT_RING3_CS64, kNonCanonical};
    check("initialise again with a bad entry 200", initialise(ctx), -XEN_EINVAL);
    ctx.trap_ctxt[200] = trap_info_t{};
    check("up after a refused context", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), -XEN_EINVAL);
}

void wait_down()
{
    while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
}

// role=smp_watchdog's vCPU 1: no timer of its own, no exit of its own.
[[noreturn]] void watchdog_spin()
{
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 1, 0);
    g_spinning = true;
    const uint64_t t0 = __builtin_ia32_rdtsc();
    while (__builtin_ia32_rdtsc() - t0 < 40000000000ull) __builtin_ia32_pause();
    write("stop guest: FAILED: the watchdog did not fire on vCPU 1\n");
    shutdown(SHUTDOWN_poweroff);
    for (;;) {
    }
}

[[noreturn]] void spin()
{
    for (;;) {
        write("stop guest: spinning\n");
        g_spinning = true;
    }
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    if (has_word(si, "role=code")) {
        // SCHEDOP_shutdown_code's reason wins over the shutdown's own, and
        // the first one given stays (qemu_guest_shutdown_code: reboot).
        sched_shutdown_t s{SHUTDOWN_reboot};
        check("SCHEDOP_shutdown_code reboot", hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown_code, uint64_t(&s)), 0);
        s.reason = SHUTDOWN_crash;
        check("SCHEDOP_shutdown_code crash, after it", hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown_code,
                                                                 uint64_t(&s)), 0);
        write(g_failed ? "stop guest: some checks FAILED\n" : "stop guest: shutdown code given\n");
        shutdown(SHUTDOWN_poweroff);
    }
    if (has_word(si, "role=watchdog")) {
        // A 1-second watchdog, never re-armed: the domain must be shut down
        // with SHUTDOWN_watchdog while it spins, entering the hypervisor
        // only when an interrupt makes it (qemu_guest_watchdog).
        // Xen's default 100 Hz periodic timer stopped first, as Linux stops
        // it: no timer of the vCPU's own is left to interrupt the spin.
        check("VCPUOP_stop_periodic_timer", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 0, 0), 0);
        sched_watchdog_t w{0, 1};
        check("SCHEDOP_watchdog 1 s", hypercall(__HYPERVISOR_sched_op, SCHEDOP_watchdog, uint64_t(&w)), 1);
        const uint64_t t0 = __builtin_ia32_rdtsc();
        while (__builtin_ia32_rdtsc() - t0 < 40000000000ull) __builtin_ia32_pause();
        write("stop guest: FAILED: the watchdog did not fire\n");
        shutdown(SHUTDOWN_poweroff);
    }
    if (has_word(si, "role=smp_watchdog")) {
        check("VCPUOP_stop_periodic_timer", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 0, 0), 0);
        static vcpu_guest_context_t ctx;
        ctx.flags = VGCF_in_kernel;
        ctx.user_regs.rip = uint64_t(&watchdog_spin);
        ctx.user_regs.rsp = uint64_t(g_stack + sizeof(g_stack) - 8);
        ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
        check("initialise vCPU 1", initialise(ctx), 0);
        check("up vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
        while (!g_spinning) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
        sched_watchdog_t w{0, 1};
        check("SCHEDOP_watchdog 1 s", hypercall(__HYPERVISOR_sched_op, SCHEDOP_watchdog, uint64_t(&w)), 1);
        write(g_failed ? "stop guest: some checks FAILED\n" : "stop guest: vCPU 0 goes down, vCPU 1 spins\n");
        hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 0, 0);
        write("stop guest: FAILED: vCPU 0 came back from VCPUOP_down\n");
        for (;;) {
        }
    }
    const bool role_down = has_word(si, "role=down");
    if (role_down || has_word(si, "role=spin")) {
        static vcpu_guest_context_t ctx;
        ctx.flags = VGCF_in_kernel;   // else it starts in user mode, which needs ctrlreg[1]
        ctx.user_regs.rip = uint64_t(role_down ? &down : &spin);
        ctx.user_regs.rsp = uint64_t(g_stack + sizeof(g_stack) - 8);
        ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
        if (role_down) {
            ctx.fs_base = uint64_t(&g_fs_word), ctx.gs_base_kernel = uint64_t(&g_gs_word);
            ctx.kernel_ss = FLAT_KERNEL_SS, ctx.kernel_sp = ctx.user_regs.rsp;
            ctx.event_callback_eip = uint64_t(&vcpu1_down);   // never called: pvmmu sends no events yet
            ctx.trap_ctxt[0x80] = trap_info_t{0x80, 3, FLAT_RING3_CS64, uint64_t(stop_int80_entry)};
            ctx.trap_ctxt[13] = trap_info_t{13, 0, FLAT_RING3_CS64, uint64_t(stop_gp_entry)};
            refusals(ctx);
        }
        check("initialise vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), 0);
        check("up vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
        while (!g_spinning) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
        if (!role_down) finish("stop guest (spinner's domain)");
        wait_down();
        check("vCPU 1 started with its context's %fs base", g_seen_fs == g_fs_word, 1);
        check("vCPU 1 started with its context's %gs base", g_seen_gs == g_gs_word, 1);
        check("vCPU 1 started with its context's CR2", long(g_seen_cr2), 0);
        check("vCPU 1's INT $0x80 reached the context's handler", long(g_vector), 0x80);
        // Up again with a context that has no handler for 0x80: #GP, as the
        // IDT gate's refusal.
        ctx.trap_ctxt[0x80] = trap_info_t{};
        ctx.ctrlreg[2] = kCr2;
        ctx.user_regs.rip = uint64_t(&again);
        g_spinning = false;
        g_vector = 0;
        check("initialise vCPU 1 again", initialise(ctx), 0);
        check("up vCPU 1 again", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
        while (!g_spinning) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
        wait_down();
        check("vCPU 1 started again with its context's CR2", g_seen_cr2 == kCr2, 1);
        check("vCPU 1's old handler for 0x80 is gone: #GP", long(g_vector), 13);
        // The IDT bit and the gate: 0x80 on a CPU, 0x100 under QEMU's TCG,
        // which names a gate by its vector times two (edge_guest, conform_guest).
        check("the #GP's error code names vector 0x80", g_error == 0x402 || g_error == 0x802, 1);
        write("stop guest: vCPU 1 went down, vCPU 0 goes down last\n");
        hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 0, 0);
        write("stop guest: FAILED: vCPU 0 came back from VCPUOP_down\n");
        for (;;) {
        }
    }
    const uint64_t t0 = __builtin_ia32_rdtsc();
    while (__builtin_ia32_rdtsc() - t0 < 8000000000ull) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    write("stop guest: waited\n");
    finish("stop guest (waiting domain)");
}

extern "C" [[noreturn]] void stop_on_trap(uint64_t vector, uint64_t error)
{
    g_vector = vector;
    g_error = error;
    g_spinning = true;
    vcpu1_down();
}
