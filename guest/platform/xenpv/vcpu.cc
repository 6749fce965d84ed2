// The domain's vCPUs: their stacks and Cpus, the trap table, and bring-up
// (the boot vCPU starts every other one with VCPUOP_initialise and VCPUOP_up,
// xen/vcpu.h, as Linux brings up its CPUs).
//
// Each vCPU runs on a 16 KiB stack of its own, aligned to its size, whose
// lowest word points to the vCPU's Cpu: that is how this_cpu() finds it
// (a ring-3 guest cannot set its own %gs base).
#include <new>

#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

struct alignas(kStackSize) Stack {
    Cpu* cpu;
    uint8_t bytes[kStackSize - sizeof(Cpu*)];
};
Stack g_stacks[kMaxXenpvVcpus];
XenpvCpu g_plat[kMaxXenpvVcpus];
alignas(Cpu) unsigned char g_cpu_storage[kMaxXenpvVcpus][sizeof(Cpu)];

Cpu& make_cpu(unsigned id)
{
    Cpu* c = new (g_cpu_storage[id]) Cpu(g_plat[id], g_plat[id], id);
    g_stacks[id].cpu = c;
    return *c;
}

// Every vCPU's trap table: page faults go to entry.S; any other exception
// has no handler, so the hypervisor crashes the domain and says why. The
// boot vCPU sets it; a secondary one starts with it (its context's
// trap_ctxt, start_secondary), as Linux brings up its CPUs.
trap_info_t page_fault_trap() { return {14, 0, FLAT_RING3_CS64, uint64_t(&xenpv_page_fault)}; }

void set_traps()
{
    trap_info_t traps[] = {page_fault_trap(), {0, 0, 0, 0}};
    if (hypercall(__HYPERVISOR_set_trap_table, uint64_t(traps)) != 0) {
        rt::print("xenpv: set_trap_table failed");
        rt::print("Test result: ERROR");
        shutdown(SHUTDOWN_crash);
    }
}

// The vCPUs the domain has: VCPUOP_is_up answers for each that exists.
unsigned count_vcpus()
{
    unsigned n = 1;
    while (n < kMaxXenpvVcpus && hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, n, 0) >= 0) ++n;
    return n;
}

[[noreturn]] void secondary_cpu(unsigned id);

// vCPU `id` starts in secondary_cpu(id) on its own stack, on the boot L4
// (gpfn 0); the runtime moves it to the test's address space later.
bool start_secondary(unsigned id)
{
    static vcpu_guest_context_t ctx;   // 5 KiB: not on a 16 KiB stack
    ctx = vcpu_guest_context_t{};
    ctx.user_regs.rip = uint64_t(&secondary_cpu);
    ctx.user_regs.rsp = stack_top(id) - 8;   // as after a call: the ABI's alignment
    ctx.user_regs.rdi = id;
    // What Xen also needs (pvmmu takes them as given): a kernel-mode start on
    // the flat kernel selectors, the kernel stack for a return from user
    // mode. Not VGCF_online: on Xen it clears the down flag, so VCPUOP_up
    // would find the vCPU up and wake nothing.
    ctx.flags = VGCF_in_kernel;
    ctx.user_regs.cs = FLAT_KERNEL_CS64;
    ctx.user_regs.ss = FLAT_KERNEL_SS;
    ctx.user_regs.rflags = 0x200;   // IF: events may come
    ctx.kernel_ss = FLAT_KERNEL_SS;
    ctx.kernel_sp = ctx.user_regs.rsp;
    ctx.ctrlreg[3] = xen_pfn_to_cr3(g_boot.p2m[g_boot.l4.v]);   // the boot L4 (the library is not up yet)
    ctx.trap_ctxt[14] = page_fault_trap();   // no set_trap_table of its own (set_traps)
    make_cpu(id);
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, id, uint64_t(&ctx)) == 0 &&
           hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, id, 0) == 0;
}

[[noreturn]] void secondary_cpu(unsigned id)
{
    rt::secondary_main(*g_stacks[id].cpu);
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, id, 0);
    for (;;) {
    }
}

} // namespace

uint64_t stack_top(unsigned id) { return uint64_t(&g_stacks[id]) + kStackSize; }

[[noreturn]] void boot_cpu()
{
    set_traps();
    Cpu& c = make_cpu(0);
    g_boot.nr_vcpus = count_vcpus();
    load_facts();
    for (unsigned i = 1; i < g_boot.nr_vcpus; ++i) {
        if (!start_secondary(i)) {
            rt::print("xenpv: vCPU %u did not start", i);
            rt::print("Test result: ERROR");
            shutdown(SHUTDOWN_crash);
        }
    }
    rt::boot_main(c, g_boot);
    shutdown(SHUTDOWN_poweroff);
    for (;;) {
    }
}

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest::xenpv;

namespace pvmmu::guest::rt {

Cpu& this_cpu()
{
    uint64_t sp;
    asm volatile("mov %%rsp, %0" : "=r"(sp));
    return *reinterpret_cast<Stack*>(sp & ~(kStackSize - 1))->cpu;
}

unsigned nr_vcpus() { return g_boot.nr_vcpus; }

} // namespace pvmmu::guest::rt
