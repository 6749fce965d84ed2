// The whole-machine pause of the invariant check; see cpu/quiesce.h.
#include "cpu/quiesce.h"

#include <atomic>

#include "cpu/percpu.h"
#include "cpu/x86.h"

namespace pvmmu::x86 {

namespace {

constexpr auto kSeqCst = std::memory_order_seq_cst;

std::atomic<bool> g_paused{false};

} // namespace

std::atomic<bool> g_quiesce_enabled{false};

void quiesce_enable() { g_quiesce_enabled.store(true, std::memory_order_release); }

void section_enter_paused()
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

namespace {
// Whether the pausing CPU was inside a section when it paused (it is one
// CPU at a time: g_paused is held meanwhile).
bool g_pauser_was_inside = false;
} // namespace

bool quiesce_begin()
{
    // One pause at a time, and a second caller is refused, not queued:
    // checkers taking turns could keep every other CPU waiting for good.
    bool expected = false;
    if (!g_paused.compare_exchange_strong(expected, true, kSeqCst)) return false;
    PerCpu& c = this_cpu();
    g_pauser_was_inside = c.in_section.load(std::memory_order_relaxed);
    c.in_section.store(false, kSeqCst);
    for (unsigned i = 0; i < g_nr_cpus; ++i)
        if (&g_cpus[i] != &c)
            while (g_cpus[i].in_section.load(kSeqCst)) pause();
    return true;
}

void quiesce_end()
{
    const bool inside = g_pauser_was_inside;
    g_paused.store(false, kSeqCst);
    if (inside) section_enter();
}

} // namespace pvmmu::x86
