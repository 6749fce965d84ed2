// A domain's vCPUs stop with it (issue 6): booted twice (tests/qemu/tests.cmake).
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
#include "tiny_guest.h"

using namespace tiny;

namespace {

alignas(16) uint8_t g_stack[16384];
volatile bool g_spinning = false;
uint64_t g_fs_word = 0x0123456789abcdef, g_gs_word = 0xfedcba9876543210;
volatile uint64_t g_seen_fs = 0, g_seen_gs = 0;   // what vCPU 1 read through %fs:0 and %gs:0

[[noreturn]] void down()
{
    uint64_t fs, gs;
    asm volatile("mov %%fs:0, %0; mov %%gs:0, %1" : "=r"(fs), "=r"(gs));
    g_seen_fs = fs;
    g_seen_gs = gs;
    g_spinning = true;
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 1, 0);
    write("stop guest: FAILED: vCPU 1 came back from VCPUOP_down\n");
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
    const bool role_down = has_word(si, "role=down");
    if (role_down || has_word(si, "role=spin")) {
        static vcpu_guest_context_t ctx;
        ctx.user_regs.rip = uint64_t(role_down ? &down : &spin);
        ctx.user_regs.rsp = uint64_t(g_stack + sizeof(g_stack) - 8);
        ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
        if (role_down) ctx.fs_base = uint64_t(&g_fs_word), ctx.gs_base_kernel = uint64_t(&g_gs_word);
        check("initialise vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), 0);
        check("up vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
        while (!g_spinning) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
        if (!role_down) finish("stop guest (spinner's domain)");
        while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0)
            hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
        check("vCPU 1 started with its context's %fs base", g_seen_fs == g_fs_word, 1);
        check("vCPU 1 started with its context's %gs base", g_seen_gs == g_gs_word, 1);
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
