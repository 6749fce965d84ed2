// How events and timers reach a vCPU on bare metal (docs/architecture.md §9
// "What the platform does"): the return-to-guest check (fire due timers,
// deliver a pending upcall, arm the LAPIC timer for the next deadline), made
// on the returns a per-CPU mark asks for (pv/events.h), the kick IPI to a
// vCPU on another CPU, and the halt of a vCPU in SCHEDOP_block or
// SCHEDOP_poll.
//
// A vCPU has a CPU to itself (pinned), so a CPU's timer serves one vCPU: it
// is armed for that vCPU's earliest deadline (core/event_ops.h
// next_deadline). Its interrupt, and a kick, only end what the CPU was
// doing; the work is done where the CPU next returns to the guest or loops
// in its halt, never inside an interrupt that may have interrupted the core
// (timer_expire takes the event lock).
#include <pvmmu/abi.h>

#include "boot/time.h"
#include "core/event_ops.h"
#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "pv/console.h"
#include "pv/domain.h"
#include "pv/events.h"
#include "pv/run.h"
#include "pv/traps.h"
#include "pv/watchdog.h"

namespace pvmmu::x86 {

namespace {

// The domain's earliest watchdog deadline (pv/watchdog.cc): the timer is
// armed for it too, so a domain whose vCPUs spin or sleep with nothing else
// due is still shut down when it expires, as on Xen.
uint64_t watchdog_next(const Vcpu& v)
{
    return guest_domain(v).watchdog_next.load(std::memory_order_acquire);
}

// When the CPU's timer must next interrupt v: its own deadlines, and its
// domain's watchdog.
uint64_t wake_at(const Vcpu& v)
{
    const uint64_t events = next_deadline(v), watchdog = watchdog_next(v);
    return events < watchdog ? events : watchdog;
}

// The last deadline this CPU's timer was armed for, in system time and as
// tsc_at gave it. Nearly every return that checks the timers arms the same
// deadline again, and tsc_at, a fixed function once the clock is calibrated
// (boot/time.cc), costs more than the compare.
struct ArmedWake {
    uint64_t ns = ~0ull;
    uint64_t tsc = 0;
};
ArmedWake g_wake[kMaxCpus];

void arm_timer(const Vcpu& v)
{
    const uint64_t ns = wake_at(v);
    ArmedWake& w = g_wake[this_cpu_id()];
    if (w.ns != ns) {
        w.tsc = tsc_at(ns);
        w.ns = ns;
    }
    lapic_timer_arm(w.tsc);
}

// v's due deadlines at `now` fired (VIRQ_TIMER raised, a poll timed out), the
// vCPUs that woke kicked. The tick also takes console input (pv/console.h), so
// what is typed reaches a guest that waits on its timer, even halted.
void fire_due_timers(Vcpu& v, uint64_t now)
{
    if (next_deadline(v) > now) return;
    event_kick(v, timer_expire(*core(), v, now));
    console_input_poll(v);
}

} // namespace

namespace {

void kick_vcpus(const Domain& d, Kicks k)
{
    const uint32_t here = this_cpu_id();
    while (k.vcpus) {
        const unsigned id = unsigned(__builtin_ctzll(k.vcpus));
        k.vcpus &= k.vcpus - 1;
        if (id >= d.nr_vcpus) continue;
        // The caller's own upcall, and any vCPU's on this CPU, comes on this
        // CPU's return to the guest; another CPU is interrupted, from the
        // guest, its halt or the hypervisor (cpu/traps.cc kVectorKick), and
        // makes the same check on its own way back. A CPU whose vCPU is not
        // running idles: the kick only ends a hlt there.
        const CpuId cpu = d.vcpus[id].cpu;
        if (cpu == here || cpu >= g_nr_cpus) continue;
        if (g_cpus[cpu].state.load(std::memory_order_acquire) != CpuState::Online) continue;
        lapic_send_fixed(g_cpus[cpu].apic_id, kVectorKick);
    }
}

} // namespace

void event_kick(const Vcpu& self, Kicks k) { kick_vcpus(*self.domain, k); }

// Another domain's vCPUs: each is pinned to a CPU of its own, never this
// one (which runs the sender), so each is interrupted; a domain already torn
// down (no longer registered) has none to wake. Its Domain is the loader's
// and outlives the run (boot/main.cc g_guests), so a teardown racing this
// costs at most a kick that ends an idle CPU's hlt.
void event_kick_remote(DomId dom, Kicks k)
{
    if (!k.vcpus) return;
    if (const Domain* d = core()->domain(dom)) kick_vcpus(*d, k);
}

void guest_return_events(TrapFrame& f, uint8_t what)
{
    Vcpu& v = *this_vcpu();
    if (!v.domain->events) return;
    if (!(what & kCheckTimers)) {
        guest_upcall(f);
        return;
    }
    // One reading of the clock for both: a deadline that falls due just
    // after it has the timer armed in the past, which fires at once. Before
    // the earliest of the vCPU's deadlines and its domain's watchdog neither
    // has anything to do.
    const uint64_t now = system_time_now();
    if (now >= wake_at(v)) {
        watchdog_on_return(v, now);
        fire_due_timers(v, now);
    }
    guest_upcall(f);
    arm_timer(v);
}

void guest_arm_timer(const Vcpu& v)
{
    if (v.domain->events) arm_timer(v);
}

// Interrupts are on (a hypercall); the CPU leaves its section (cpu/quiesce.h)
// while it halts, so a pause of the machine never waits for an event.
// Each round clears IF first and only then asks whether v is still
// blocked: a raise on another CPU clears the mark before it sends the kick
// (core/src/sched_block.cc), so either this check sees it or the kick is
// pending when STI; HLT opens the window (cpu/x86.h sti_hlt), and the HLT
// ends at once. A due timer is fired here with interrupts on; an expired
// watchdog ends the wait (a spurious wake-up), so that the return to the
// guest shuts the domain down (guest_return_events).
void block_wait(Vcpu& v)
{
    section_leave();
    VcpuCounters& n = arch(v).counters;
    for (;;) {
        cli();
        if (!vcpu_blocked(v) || guest_domain_stopped(v)) break;
        const uint64_t deadline = next_deadline(v), now = system_time_now();
        if (watchdog_next(v) <= now) {
            // Looked at under its lock: one re-armed or freed by another
            // vCPU meanwhile leaves the vCPU blocked, waiting on.
            sti();
            if (watchdog_expired(v, now)) break;
            continue;
        }
        if (deadline <= now) {
            sti();
            fire_due_timers(v, system_time_now());
            continue;
        }
        arm_timer(v);
        n.halts.fetch_add(1, std::memory_order_relaxed);
        sti_hlt();
    }
    sti();
    section_enter();
}

} // namespace pvmmu::x86
