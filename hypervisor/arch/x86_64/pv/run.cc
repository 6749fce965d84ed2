// Entering guest vCPUs and ending domains; see pv/run.h.
#include <atomic>

#include <pvmmu/abi.h>

#include "boot/exit.h"
#include "boot/time.h"
#include "core/domain_teardown.h"
#include "core/event_ops.h"
#include "cpu/cpu_bits.h"
#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/selectors.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/native_window.h"
#include "mm/paging.h"
#include "pv/console.h"
#include "pv/debugreg.h"
#include "pv/descriptors.h"
#include "pv/domain.h"
#include "pv/events.h"
#include "pv/fpu.h"
#include "pv/guest_mode.h"
#include "pv/grants.h"
#include "pv/run.h"
#include "pv/runstate.h"
#include "pv/vcpu_info.h"

extern "C" [[noreturn]] void guest_enter(const pvmmu::x86::TrapFrame* f);

namespace pvmmu::x86 {

namespace {

constexpr uint32_t kMsrStar = 0xC0000081, kMsrLstar = 0xC0000082, kMsrCstar = 0xC0000083, kMsrFmask = 0xC0000084;
constexpr uint32_t kMsrSysenterCs = 0x174, kMsrSysenterEsp = 0x175, kMsrSysenterEip = 0x176;

std::atomic<unsigned> g_running{0};           // domains built and not shut down
std::atomic<unsigned> g_built{0}, g_gone{0};   // domains built; their memory given back
std::atomic<unsigned> g_exit_reason{0};        // of the shutdown that left none running
std::atomic<bool> g_shut_down[kMaxDomains];

const char* reason_name(unsigned r)
{
    static constexpr const char* kNames[] = {"poweroff", "reboot", "suspend", "crash", "watchdog",
                                             "soft_reset"};
    return r <= SHUTDOWN_MAX ? kNames[r] : "unknown";
}

// A vCPU of g is off its CPU. The last one of a domain that has shut down
// gives the domain's memory back: no vCPU of it can run, walk or change its
// tables any more (one taken to run later sees the shutdown and leaves).
void leave(GuestDomain& g)
{
    if (g.on_cpu.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!g_shut_down[g.dom.id].load(std::memory_order_acquire) || g.gone.exchange(true)) return;
    sti();   // the other domains' shootdowns are served meanwhile
    const DomId id = g.dom.id;
    section_enter();   // not while the invariant check runs
    // Nothing may point into the frames given back: the vcpu_info a vCPU
    // registered is in one the domain held writable (pv/vcpu_info.cc).
    for (unsigned i = 0; i < g.dom.nr_vcpus; ++i) {
        arch(g.dom.vcpus[i]).info.store(nullptr, std::memory_order_release);
        arch(g.dom.vcpus[i]).runstate_area = 0;
    }
    // Its event state points into its shared_info and vcpu_info frames (and
    // the FIFO ABI's, released here): gone with them, so no event or check
    // reaches a frame given back. Its ports are closed first, under its event
    // lock and its peers' (a channel's other end is unbound again), so no
    // other domain's send is raising into it while the pointer goes.
    DomainEvents* events = g.dom.events;
    evtchn_teardown(*core(), g.dom);
    g.dom.events = nullptr;
    if (events) release_event_frames(*core(), *events);
    TeardownResult r = relinquish_domain(*core(), g.dom);
    // Its grant table's frames apart, so the line below counts the frames it
    // was built with (docs/boot.md).
    guest_grants_release(g, r.freed, r.kept);
    native_window_release(id);
    section_leave();
    printk("pvmmu: domain %u: %lu frames given back, %lu kept\n", id, r.freed, r.kept);
    cli();
    // Every domain gone means every one has shut down, the last one too.
    if (g_gone.fetch_add(1, std::memory_order_acq_rel) + 1 != g_built.load(std::memory_order_acquire)) return;
    report_core_invariants();
    const unsigned reason = g_exit_reason.load(std::memory_order_acquire);
    printk("pvmmu: no domain left running; ending (isa-debug-exit code 0x%x)\n", HV_EXIT_SHUTDOWN + reason);
    hv_exit(HV_EXIT_SHUTDOWN + reason);
}

// The %fs and kernel %gs bases a vCPU starts with, never the last vCPU's on
// this CPU: the kernel's %gs base where syscall_init leaves the guest's, in
// IA32_KERNEL_GS_BASE, which trap_return's SWAPGS makes the live one. Nothing
// is saved when a vCPU leaves its CPU: it never resumes (VCPUOP_down drops
// its state, docs/abi.md §10), and while it runs the MSRs are its bases.
void load_segment_bases(const VcpuArch& a)
{
    wrmsr(MSR_FS_BASE, a.fs_base);
    wrmsr(MSR_KERNEL_GS_BASE, a.gs_base_kernel);
}

} // namespace

void cpu_leave_vcpu()
{
    PerCpu& c = this_cpu();
    Vcpu& v = *c.vcpu;
    guest_console_flush(v);
    guest_debug_unload();   // no breakpoint of the vCPU's is left armed once it is not this CPU's
    c.vcpu = nullptr;
    lapic_timer_arm(0);   // its deadlines are no longer this CPU's
    write_cr3(hv_root().v);
    leave(guest_domain(v));
}

// cpu_idle's body, at the top of the CPU's stack (cpu_idle).
extern "C" [[noreturn]] void cpu_idle_loop()
{
    PerCpu& c = this_cpu();
    section_leave();   // a hypercall that ends here (shutdown, VCPUOP_down) never returns
    if (c.vcpu) cpu_leave_vcpu();   // its domain stopped (or it shut it down)
    write_cr3(hv_root().v);
    for (;;) {
        cli();   // a kick between the check and the hlt still ends the hlt: sti_hlt
        // A vCPU started while its domain shut down never enters it. Counted
        // on the CPU before the check, so the domain's teardown waits for it.
        if (Vcpu* v = c.next.exchange(nullptr, std::memory_order_acq_rel)) {
            GuestDomain& g = guest_domain(*v);
            g.on_cpu.fetch_add(1, std::memory_order_acq_rel);
            if (!guest_domain_stopped(*v)) guest_run(*v);
            leave(g);
        }
        sti_hlt();
    }
}

void cpu_idle()
{
    // Nothing returns to the caller's frames: the idle loop starts again at
    // the top of this CPU's stack, whichever stack the caller was on. A
    // domain crashed from the #DB handler (cpu/traps.cc) would otherwise idle,
    // tear the domain down and end the run on the 4 KiB #DB IST stack, whose
    // overflow is a #DF.
    const uint64_t top = this_cpu().stack_top;
    if (top) asm volatile("lea -8(%0), %%rsp\n\tjmp cpu_idle_loop" : : "r"(top) : "memory");
    cpu_idle_loop();
}

void syscall_init()
{
    // SYSCALL: CS = STAR[47:32], SS = +8; the guest's selectors come back by
    // IRETQ, but STAR[63:48] is set as SYSRET would need it (cpu/descriptors.h).
    wrmsr(kMsrStar, (uint64_t(HV_SEL_GUEST_CS32) << 48) | (uint64_t(HV_SEL_CS) << 32));
    wrmsr(kMsrLstar, reinterpret_cast<uint64_t>(&syscall_entry));
    static_assert(SYSCALL_RFLAGS_MASK == (RFLAGS_TF | RFLAGS_IF | RFLAGS_DF | RFLAGS_IOPL | RFLAGS_NT | RFLAGS_AC));
    wrmsr(kMsrFmask, SYSCALL_RFLAGS_MASK);
    // SYSCALL from compatibility mode (a guest's 32-bit code segment) takes
    // CSTAR: an entry of its own, which bounces it as Xen does (cpu/traps.cc).
    // SYSENTER stays shut: with a null SYSENTER_CS the CPU raises #GP(0) in
    // ring 3 (Intel; AMD: #UD in long mode), bounced to the guest, which is
    // what Xen delivers without a sysenter callback. Set explicitly, not
    // left to firmware or reset.
    wrmsr(kMsrCstar, reinterpret_cast<uint64_t>(&syscall32_entry));
    wrmsr(kMsrSysenterCs, 0);
    wrmsr(kMsrSysenterEip, 0);
    wrmsr(kMsrSysenterEsp, 0);
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
    // While a guest runs, its %gs base is live and the PerCpu waits here.
    wrmsr(MSR_KERNEL_GS_BASE, 0);
}

void guest_domain_running()
{
    g_built.fetch_add(1, std::memory_order_acq_rel);
    g_running.fetch_add(1, std::memory_order_acq_rel);
}

unsigned guest_domains_started() { return g_built.load(std::memory_order_acquire); }

VcpuCounters* counters_for(const Domain* origin)
{
    Vcpu* v = this_cpu().vcpu;
    return v && origin == v->domain ? &arch(*v).counters : nullptr;
}

void guest_run(Vcpu& v)
{
    cli();
    this_cpu().vcpu = &v;
    guest_gdt_reset(v);
    guest_gdt_start(v);   // VCPUOP_initialise's gdt_frames, if it gave any
    guest_fpu_reset(v);
    guest_debug_load(v);
    if (vcpu_info* info = guest_vcpu_info(v)) time_publish(info->time);   // on the CPU it runs on
    boot_time_report("first guest entry");   // once, the first vCPU of all
    load_segment_bases(arch(v));
    // A vCPU starts in its kernel mode, on its kernel L4 (pv/guest_mode.h),
    // and enters its user mode last where VCPUOP_initialise said so (the
    // runstate area is a kernel address).
    arch(v).user_mode = arch(v).user_mode_next = false;
    write_cr3(maddr_of(v.guest_table).v);
    runstate_change(v, RUNSTATE_running);   // its area through the tables just loaded
    guest_arm_timer(v);   // Xen's default periodic tick, or what was set before it went down
    guest_return_check_due();   // its first return looks at everything (pv/events.h)
    if (arch(v).start_user) guest_enter_user_mode(v);
    guest_enter(&static_cast<VcpuArch*>(v.platform_data)->start);
}

bool guest_domain_stopped(const Vcpu& v)
{
    return g_shut_down[v.domain->id].load(std::memory_order_acquire);
}

void guest_shutdown(unsigned reason)
{
    Vcpu& v = *this_cpu().vcpu;
    guest_console_flush(v);
    // SCHEDOP_shutdown_code's reason, if the domain gave one, whatever this
    // shutdown's own (Xen's domain_shutdown).
    if (const int code = guest_domain(v).shutdown_code.load(std::memory_order_acquire); code >= 0)
        reason = unsigned(code);
    const DomId id = v.domain->id;
    if (!g_shut_down[id].exchange(true, std::memory_order_acq_rel)) {
        printk("pvmmu: domain %u shut down (%s) by vCPU %u\n", id, reason_name(reason), v.id);
        // Its other vCPUs stop at their next interrupt or hypercall return.
        const Domain& d = *v.domain;
        for (unsigned i = 0; i < d.nr_vcpus; ++i)
            if (&d.vcpus[i] != &v) lapic_send_fixed(g_cpus[d.vcpus[i].cpu].apic_id, kVectorKick);
        // Read when the last domain's memory is back (leave), which is after
        // this vCPU has left its CPU.
        if (g_running.fetch_sub(1, std::memory_order_acq_rel) == 1)
            g_exit_reason.store(reason, std::memory_order_release);
    }
    cpu_idle();
}

void guest_crash(const TrapFrame& f, const char* why)
{
    Vcpu& v = *this_cpu().vcpu;
    guest_console_flush(v);
    printk("pvmmu: domain %u vCPU %u crashed: %s: vector %lu (%s), error code 0x%lx, rip 0x%lx, "
           "rsp 0x%lx, cr2 0x%lx\n", v.domain->id, v.id, why, f.vector, exception_name(f.vector),
           f.error, f.rip, f.rsp, read_cr2());
    guest_shutdown(SHUTDOWN_crash);
}

} // namespace pvmmu::x86
