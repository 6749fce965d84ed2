// A pause of the whole machine for the core's invariant checker, which must
// run on a quiescent machine (core/invariants.h: no hypercall in flight).
//
// Every path that changes the core's state from a running machine — a
// hypercall (syscall_dispatch) and a domain's teardown (pv/run.cc) — runs
// inside a section of its CPU. quiesced(fn) keeps new sections from starting,
// waits until no other CPU is inside one, runs fn, and lets them go on. A
// preempted batch is outside a section between its rounds, where the core's
// invariants hold (docs/security.md §2).
//
// Each side writes its own flag and then reads the other's, both sequentially
// consistent (the Dekker pattern), so a section and a pause never both
// proceed. Nobody spins with interrupts off: a CPU inside a section may wait
// for a TLB shootdown that a waiting CPU must serve.
#pragma once

#include <atomic>

#include "cpu/percpu.h"

namespace pvmmu::x86 {

// Called at boot, before any vCPU runs, when a domain may pause the machine
// (module word invariant-check); until then sections cost nothing.
void quiesce_enable();

// Set at boot, before any vCPU runs, when some domain may pause the
// machine; until then a section costs a load and a branch, inline.
extern std::atomic<bool> g_quiesce_enabled;
void section_enter_paused();

// Enters this CPU's section, waiting while a pause is on. Interrupts on.
inline void section_enter()
{
    if (g_quiesce_enabled.load(std::memory_order_acquire)) section_enter_paused();
}
// Leaves it; nothing when this CPU is not in one (cpu_idle calls it for the
// paths that never return from a hypercall: shutdown, VCPUOP_down).
inline void section_leave()
{
    if (g_quiesce_enabled.load(std::memory_order_relaxed)) this_cpu().in_section.store(false, std::memory_order_release);
}

// The pause itself; use quiesced().
bool quiesce_begin();
void quiesce_end();

// Runs fn() while no other CPU is inside a section (the calling CPU's own
// section, if any, is left for the time and entered again after) and
// returns true; false, fn not run, while another CPU's pause is on (one at
// a time: a second caller is refused, not queued). Interrupts on.
template <class F>
bool quiesced(F&& fn)
{
    if (!quiesce_begin()) return false;
    fn();
    quiesce_end();
    return true;
}

// A hypercall's section, left on every return (the paths that never return
// leave it in cpu_idle).
struct Section {
    Section() { section_enter(); }
    ~Section() { section_leave(); }
    Section(const Section&) = delete;
    Section& operator=(const Section&) = delete;
};

} // namespace pvmmu::x86
