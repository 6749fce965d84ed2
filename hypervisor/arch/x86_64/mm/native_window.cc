// The unsafe native window of benchmark domains; see mm/native_window.h.
#include "mm/native_window.h"

#include <string.h>

#include <pvmmu/abi.h>

#include "core/hypervisor.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/layout.h"

namespace pvmmu::x86 {

static_assert(HV_NATIVE_WINDOW_VIRT == PVMMU_UNSAFE_NATIVE_WINDOW);
static_assert(HV_NATIVE_WINDOW_VIRT == 0xFFFF800000000000 + (uint64_t(HV_SLOT_NATIVE_WINDOW - 256) << 39));
static_assert(HV_NATIVE_WINDOW_VIRT >= __HYPERVISOR_VIRT_START && HV_NATIVE_WINDOW_VIRT < __HYPERVISOR_VIRT_END);

namespace {

using namespace pte_bit;
// Every level user, writable, NX ("Access Rights": the leaf's rights are the
// AND of the path's); A and D preset so the walker never writes the window.
constexpr uint64_t kLink = P | RW | US | A | NX;
constexpr uint64_t kLeaf = P | RW | US | A | D | NX;
constexpr unsigned kMaxPrinted = 8;

struct Window {
    Mfn first{0};        // the domain's run
    uint64_t nr = 0;     // 0: no window
    Mfn l3{0};           // the window's L3; then its L2s
    Mfn l1{0};           // its L1s, then the domain's run
    bool released = false;   // the domain's memory was given back: no leaf left
};
Window g_win[kMaxDomains];

uint64_t* table(Mfn m) { return core()->mem().table(m); }

struct Check {
    const Window& w;
    DomId id;
    uint64_t leaves = 0;
    unsigned bad = 0;

    void fail(const char* why, uint64_t va, uint64_t e)
    {
        if (bad++ < kMaxPrinted)
            printk("native window: VIOLATION: domain %u: %s: va 0x%016lx entry 0x%016lx\n", id, why, va, e);
    }

    void walk(Mfn t, unsigned level, uint64_t va)
    {
        if (!core()->mem().valid(t)) return fail("window table outside machine memory", va, maddr_of(t).v);
        if (core()->frame(t).owner.load(std::memory_order_relaxed) != kOwnerXen)
            fail("window table not owned by the hypervisor", va, maddr_of(t).v);
        const unsigned shift = kPageShift + 9 * (level - 1);
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const Pte p{table(t)[i]};
            if (!p.present()) continue;
            const uint64_t v = va + (uint64_t(i) << shift);
            if (p.v != (maddr_of(p.mfn()).v | (level == 1 ? kLeaf : kLink))) {
                fail("flags other than the window's", v, p.v);
                continue;
            }
            if (level > 1) {
                walk(p.mfn(), level - 1, v);
                continue;
            }
            ++leaves;
            const uint64_t g = (v - HV_NATIVE_WINDOW_VIRT) >> kPageShift;
            if (g >= w.nr || p.mfn().v != w.first.v + g) fail("not the domain's frame at this offset", v, p.v);
            else if (core()->frame(p.mfn()).owner.load(std::memory_order_relaxed) != id)
                fail("frame no longer the domain's", v, p.v);
        }
    }
};

} // namespace

int native_window_build(DomId id, uint64_t nr_frames, Mfn& first)
{
    const uint64_t l1s = ceil_div(nr_frames, kEntriesPerTable), l2s = ceil_div(l1s, kEntriesPerTable);
    if (id >= kMaxDomains || nr_frames == 0 || l2s > kEntriesPerTable) return -XEN_EINVAL;
    Hypervisor& hv = *core();
    // One run: the window's tables, then the domain's frames (nothing is
    // taken unless both fit).
    Mfn t;
    if (int rc = core_free_run(1 + l2s + l1s + nr_frames, t)) return rc;
    const Mfn l2{t.v + 1}, l1{t.v + 1 + l2s};
    first = Mfn{l1.v + l1s};
    for (uint64_t k = 0; k < 1 + l2s + l1s; ++k) {
        hv.frame(Mfn{t.v + k}).owner.store(kOwnerXen, std::memory_order_relaxed);
        memset(table(Mfn{t.v + k}), 0, kPageSize);
    }
    for (uint64_t k = 0; k < l2s; ++k) table(t)[k] = maddr_of(Mfn{l2.v + k}).v | kLink;
    for (uint64_t k = 0; k < l1s; ++k)
        table(Mfn{l2.v + k / kEntriesPerTable})[k % kEntriesPerTable] = maddr_of(Mfn{l1.v + k}).v | kLink;
    for (uint64_t g = 0; g < nr_frames; ++g)
        table(Mfn{l1.v + g / kEntriesPerTable})[g % kEntriesPerTable] = maddr_of(Mfn{first.v + g}).v | kLeaf;
    g_win[id] = Window{first, nr_frames, t, l1};
    printk("domain %u: ******** UNSAFE: unsafe-native-pt (benchmarking only) ********\n"
           "domain %u: all %lu of its frames, its page tables included, are writable to it at 0x%lx "
           "(L4 slot %u): it can map any machine frame and is NOT isolated\n",
           id, id, nr_frames, uint64_t(HV_NATIVE_WINDOW_VIRT), unsigned(HV_SLOT_NATIVE_WINDOW));
    return 0;
}

uint64_t native_window_l4e(DomId id)
{
    return id < kMaxDomains && g_win[id].nr ? maddr_of(g_win[id].l3).v | kLink : 0;
}

void native_window_release(DomId id)
{
    if (id >= kMaxDomains || !g_win[id].nr) return;
    Window& w = g_win[id];
    for (uint64_t k = 0; k < ceil_div(w.nr, kEntriesPerTable); ++k) memset(table(Mfn{w.l1.v + k}), 0, kPageSize);
    w.released = true;
}

unsigned native_window_check()
{
    unsigned bad = 0;
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const Window& w = g_win[id];
        if (!w.nr) continue;
        Check c{w, id};
        c.walk(w.l3, 3, HV_NATIVE_WINDOW_VIRT);
        if (c.leaves != (w.released ? 0 : w.nr)) c.fail("window maps a different number of frames than the domain has", 0, c.leaves);
        printk("native window: domain %u (UNSAFE): %lu frames from mfn 0x%lx aliased writable at 0x%lx, "
               "nothing else: %s\n", id, c.leaves, w.first.v, uint64_t(HV_NATIVE_WINDOW_VIRT),
               c.bad ? "FAILED" : "ok");
        bad += c.bad;
    }
    return bad;
}

} // namespace pvmmu::x86
