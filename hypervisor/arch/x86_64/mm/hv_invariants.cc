// The walk behind hv_check_invariants; see mm/hv_invariants.h. It reads the
// tables through the direct map and applies the SDM's rules for combining
// permissions across levels ("Access Rights": a page is writable only if RW
// is set at every level, executable only if NX is clear at every level, user
// only if U/S is set at every level). It is stricter than needed for U/S: any
// U/S bit anywhere counts, since no hypervisor entry has a reason to carry one.
#include "mm/hv_invariants.h"

#include "cpu/cpu_bits.h"
#include "cpu/cpu_features.h"
#include "cpu/percpu.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/layout.h"
#include "mm/paging.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kMaxPrinted = 8;

struct Walk {
    HvMapStats& s;

    void violation(const char* what, uint64_t va, uint64_t entry)
    {
        if (s.violations++ < kMaxPrinted)
            printk("invariants: VIOLATION: %s: va 0x%016lx entry 0x%016lx\n", what, va, entry);
    }

    void table_frame(Maddr t, uint64_t va)
    {
        ++s.tables;
        const Hypervisor* hv = core();
        if (hv && hv->mem().valid(t.mfn()) &&
            hv->frame(t.mfn()).owner.load(std::memory_order_relaxed) != kOwnerXen)
            violation("page-table frame not owned by the hypervisor", va, t.v);
    }

    void leaf(unsigned level, uint64_t va, uint64_t e, bool writable, bool exec)
    {
        if (writable && exec) violation("writable and executable", va, e);
        if (level == 1) {
            ++s.pages_4k;
            (exec ? s.exec : writable ? s.writable : s.read_only)++;
        } else {
            (level == 2 ? s.pages_2m : s.pages_1g)++;
        }
    }

    // `va` is the address the table's first entry maps; RW and X so far.
    void walk(Maddr t, unsigned level, uint64_t va, bool writable, bool exec)
    {
        table_frame(t, va);
        const uint64_t* e = dmap<const uint64_t>(t);
        const unsigned shift = kPageShift + 9 * (level - 1);
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const Pte p{e[i]};
            if (!p.present()) continue;
            uint64_t v = va + (uint64_t(i) << shift);
            if (level == 4) {
                v = uint64_t(int64_t(v << 16) >> 16);   // canonical: sign-extend bit 47
                if (i != HV_SLOT_PERCPU && i != HV_SLOT_IMAGE && i != HV_SLOT_DIRECTMAP)
                    violation("mapping outside the hypervisor's L4 slots", v, p.v);
            }
            if (p.v & pte_bit::US) violation("user-accessible", v, p.v);
            const bool w = writable && (p.v & pte_bit::RW);
            const bool x = exec && !(p.v & pte_bit::NX);
            const bool large = level > 1 && (p.v & pte_bit::PS);
            if (level == 4 && (p.v & pte_bit::PS)) violation("PS set in an L4 entry", v, p.v);
            if (level == 1 || large) leaf(level, v, p.v, w, x);
            else walk(maddr_of(p.mfn()), level - 1, v, w, x);
        }
    }
};

void check_cpu(HvMapStats& s, const PerCpu& c)
{
    ++s.cpus;
    const char* bad = nullptr;
    if (!(c.cr0 & CR0_PG)) bad = "paging off";
    else if (const char* off = cpu_features_missing(c.cr0, c.cr4, c.efer)) bad = off;
    else if (!(c.efer & EFER_LMA)) bad = "not in long mode";
    else if ((c.cr3 & pte_bit::ADDR) != hv_root().v) bad = "CR3 is not the hypervisor's root";
    if (bad) {
        ++s.violations;
        printk("invariants: VIOLATION: cpu %u: %s\n", c.id, bad);
    }
}

} // namespace

bool hv_check_invariants(HvMapStats& s)
{
    s = HvMapStats{};
    Walk{s}.walk(hv_root(), 4, 0, true, true);
    for (unsigned i = 0; i < g_nr_cpus; ++i)
        if (g_cpus[i].state.load(std::memory_order_acquire) == CpuState::Online) check_cpu(s, g_cpus[i]);
    return s.violations == 0;
}

} // namespace pvmmu::x86
