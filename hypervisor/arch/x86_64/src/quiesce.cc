// The whole-machine pause of the invariant check; see arch/quiesce.h.
#include "arch/quiesce.h"

#include <atomic>

#include "arch/percpu.h"
#include "arch/x86.h"

namespace pvmmu::x86 {

namespace {

constexpr auto kSeqCst = std::memory_order_seq_cst;

std::atomic<bool> g_paused{false};

} // namespace

void section_enter()
{
    PerCpu& c = this_cpu();
    for (;;) {
        c.in_section.store(true, kSeqCst);
        if (!g_paused.load(kSeqCst)) return;
        // A pause is on (or starting): step back out so it can proceed.
        c.in_section.store(false, kSeqCst);
        while (g_paused.load(std::memory_order_relaxed)) pause();
    }
}

void section_leave() { this_cpu().in_section.store(false, std::memory_order_release); }

namespace {
// Whether the pausing CPU was inside a section when it paused (it is one
// CPU at a time: g_paused is held meanwhile).
bool g_pauser_was_inside = false;
} // namespace

void quiesce_begin()
{
    PerCpu& c = this_cpu();
    const bool inside = c.in_section.load(std::memory_order_relaxed);
    // Out of its own section first: two CPUs pausing at once would otherwise
    // each wait for the other's section to end.
    c.in_section.store(false, kSeqCst);
    bool expected = false;
    while (!g_paused.compare_exchange_weak(expected, true, kSeqCst)) {
        expected = false;
        pause();
    }
    g_pauser_was_inside = inside;
    for (unsigned i = 0; i < g_nr_cpus; ++i)
        if (&g_cpus[i] != &c)
            while (g_cpus[i].in_section.load(kSeqCst)) pause();
}

void quiesce_end()
{
    const bool inside = g_pauser_was_inside;
    g_paused.store(false, kSeqCst);
    if (inside) section_enter();
}

} // namespace pvmmu::x86
