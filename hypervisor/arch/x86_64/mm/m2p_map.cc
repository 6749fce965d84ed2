// The guests' read-only M2P mapping; see mm/m2p_map.h.
#include "mm/m2p_map.h"

#include <pvmmu/abi.h>

#include "boot/boot_alloc.h"
#include "boot/exit.h"
#include "core/hypervisor.h"
#include "core/pte.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/layout.h"

namespace pvmmu::x86 {

static_assert(HV_M2P_VIRT == MACH2PHYS_VIRT_START && HV_M2P_VIRT == 0xFFFF800000000000 + (uint64_t(HV_SLOT_M2P - 256) << 39));
static_assert(sizeof(unsigned long) == sizeof(uint64_t), "the M2P's entry is the guest's unsigned long");

namespace {

using namespace pte_bit;
// User and readable at every level, writable and executable at none ("Access
// Rights": the leaf's rights are the AND of the path's, so a clear RW or a
// set NX anywhere would do; at every level, no single entry makes it
// writable). A preset: the walker then never writes these tables.
constexpr uint64_t kLink = P | US | A | NX;
constexpr uint64_t kLeaf = P | US | A | NX;
constexpr unsigned kMaxPrinted = 8;

Maddr g_m2p{0};
uint64_t g_pages = 0;
Maddr g_l3{0};

uint64_t* table(Maddr a) { return dmap<uint64_t>(a); }

struct Check {
    uint64_t leaves = 0;
    unsigned bad = 0;

    void fail(const char* why, uint64_t va, uint64_t e)
    {
        if (bad++ < kMaxPrinted) printk("m2p map: VIOLATION: %s: va 0x%016lx entry 0x%016lx\n", why, va, e);
    }

    void walk(Maddr t, unsigned level, uint64_t va)
    {
        const Hypervisor& hv = *core();
        if (!hv.mem().valid(t.mfn()) || hv.frame(t.mfn()).owner.load(std::memory_order_relaxed) != kOwnerXen)
            return fail("table not owned by the hypervisor", va, t.v);
        const unsigned shift = kPageShift + 9 * (level - 1);
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const Pte p{table(t)[i]};
            if (!p.present()) continue;
            const uint64_t v = va + (uint64_t(i) << shift);
            if (p.flags() != (level == 1 ? kLeaf : kLink)) {
                fail("flags other than read-only user NX", v, p.v);
                continue;
            }
            if (level > 1) {
                walk(maddr_of(p.mfn()), level - 1, v);
                continue;
            }
            const uint64_t page = (v - HV_M2P_VIRT) >> kPageShift;
            if (page >= g_pages || p.mfn().v != g_m2p.mfn().v + page) fail("not the M2P's page at this offset", v, p.v);
            ++leaves;
        }
    }
};

} // namespace

void m2p_map_build(Maddr m2p, uint64_t bytes)
{
    const uint64_t pages = ceil_div(bytes, kPageSize);
    const uint64_t l1s = ceil_div(pages, kEntriesPerTable), l2s = ceil_div(l1s, kEntriesPerTable);
    // 256 GiB of M2P (MACH2PHYS_VIRT_END) is 32 Ti frames: far beyond any RAM.
    if (l2s > kEntriesPerTable / 2) panic("M2P of %lu pages does not fit Xen's M2P range", pages);
    const Maddr l3 = boot_alloc_frame();
    const Maddr l2 = boot_alloc(l2s * kPageSize), l1 = boot_alloc(l1s * kPageSize);
    for (uint64_t k = 0; k < l2s; ++k) table(l3)[k] = (l2.v + k * kPageSize) | kLink;
    for (uint64_t k = 0; k < l1s; ++k)
        table(Maddr{l2.v + (k / kEntriesPerTable) * kPageSize})[k % kEntriesPerTable] = (l1.v + k * kPageSize) | kLink;
    for (uint64_t p = 0; p < pages; ++p)
        table(Maddr{l1.v + (p / kEntriesPerTable) * kPageSize})[p % kEntriesPerTable] = (m2p.v + p * kPageSize) | kLeaf;
    g_m2p = m2p;
    g_pages = pages;
    g_l3 = l3;
}

uint64_t m2p_map_l4e() { return g_l3.v ? g_l3.v | kLink : 0; }

unsigned m2p_map_check()
{
    if (!g_l3.v) return 0;
    Check c;
    c.walk(g_l3, 3, HV_M2P_VIRT);
    if (c.leaves != g_pages) c.fail("maps a different number of pages than the M2P has", 0, c.leaves);
    printk("m2p map: %lu pages of the M2P (mfn 0x%lx) read-only at 0x%lx for guests, nothing else: %s\n",
           c.leaves, g_m2p.mfn().v, uint64_t(HV_M2P_VIRT), c.bad ? "FAILED" : "ok");
    return c.bad;
}

} // namespace pvmmu::x86
