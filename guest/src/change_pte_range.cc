// The library's range updater; see guest/change_pte_range.h.
//
// One pass over the entries per attempt, reading each through the physmap as it
// goes: no copy of the table on the stack (the L1's lock is held, so only A/D
// can change under us, and every install keeps those).
#include "guest/change_pte_range.h"

#include "guest/hypercalls.h"
#include "guest/mmu_batch.h"
#include "guest/pte.h"

namespace pvmmu::guest {

namespace {

// Entries that map a page: present ones, and PROT_NONE ones (P=0, frame kept).
bool maps_page(uint64_t e) { return pte_present(e) || (e & pte::PROTNONE); }
bool changes(uint64_t e, uint64_t nv) { return (e ^ nv) & ~pte::AD; }

// Entry i, which holds e, is to become nv (it maps a page and changes).
int plan_entry(MmuBatch& b, MmuLevel level, unsigned i, uint64_t e, uint64_t nv, int& first, int& last)
{
    switch (level) {
    case MmuLevel::FlagRange:
        if (pte_present(e)) {   // covered by the one range request, sent at the end
            if (first < 0) first = int(i);
            last = int(i);
            return 0;
        }
        return b.add(MMU_ATOMIC_PT_UPDATE, i, nv);   // PROT_NONE coming back: references
    case MmuLevel::Atomic:
        return b.add(MMU_ATOMIC_PT_UPDATE, i, nv);
    default:
        if (pte_present(e)) {
            // get_and_clear: A/D set after our read are unknown; assume them.
            nv |= pte::A | ((e & pte::RW) ? pte::D : 0);
            if (int rc = b.add(MMU_NORMAL_PT_UPDATE, i, 0)) return rc;
        }
        return b.add(MMU_NORMAL_PT_UPDATE, i, nv);
    }
}

// One attempt at `level`; `record` adds the reduced pages to the plan.
int attempt(Cpu& c, const PteRange& r, unsigned prot, MmuLevel level, FlushPlan* record, MmuBatch& b)
{
    const Va table = c.guest->va(r.l1);
    int first = -1, last = -1;
    for (unsigned k = 0; k < r.count; ++k) {
        const unsigned i = r.first + k;
        uint64_t e;
        if (!c.mem.load(table + i * sizeof(uint64_t), e)) return -XEN_EFAULT;
        if (!maps_page(e)) continue;   // a hole: demand zero will use the VMA's protection
        const uint64_t nv = pte_modify(e, prot);
        if (record && pte_reduces(e, nv)) record->add(r.va + k * kPageSize);
        if (!changes(e, nv)) continue;
        if (int rc = plan_entry(b, level, i, e, nv, first, last)) return rc;
    }
    if (first >= 0)
        if (int rc = b.add_range(unsigned(first), kProtBits, prot_to_bits(prot), unsigned(last - first + 1)))
            return rc;
    return b.flush();
}

} // namespace

int change_pte_range(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan)
{
    if (r.count == 0 || r.first + r.count > kEntriesPerTable) return -XEN_EINVAL;
    // What to flush comes from the first attempt: a redo finds the entries the
    // first one changed already changed, but they still need the flush.
    for (FlushPlan* record = &plan;; record = nullptr) {
        const MmuLevel level = c.guest->level();
        const unsigned per_pte = level == MmuLevel::Normal ? 2 : 1;
        MmuBatch b(c, r.l1, c.guest->config.batch_ptes * per_pte);
        const int rc = attempt(c, r, prot, level, record, b);
        if ((rc == -XEN_ENOSYS || rc == -XEN_EPERM) && c.guest->refused(c, b.failed_cmd()))
            continue;   // the plan is a target: redoing the L1 is idempotent
        return rc;
    }
}

} // namespace pvmmu::guest
