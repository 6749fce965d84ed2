// mprotect on an address space: VMAs first, then each L1's share through the
// range updater under the L1's lock, then one flush for whatever was reduced
// (docs/design.md §6); see guest/address_space.h and guest/change_pte_range.h.
#include "guest/address_space.h"
#include "guest/change_pte_range.h"
#include "guest/tlb.h"

namespace pvmmu::guest {

int AddressSpace::mprotect(Cpu& c, Va start, uint64_t len, unsigned prot)
{
    Guest& g = *c.guest;
    if ((start.v & (kPageSize - 1)) || (prot & ~kProtMask)) return -XEN_EINVAL;
    len = align_up(len, kPageSize);
    if (len == 0) return 0;
    const Va end = start + len;
    if (!contains(start) || end.v - base().v > size()) return -XEN_ENOMEM;

    SpinGuard tree(c, tree_);
    if (!covered(start, end)) return -XEN_ENOMEM;
    if (int rc = set_prot(start, end, prot)) return rc;

    FlushPlan plan(g.config.flush_threshold);
    int rc = 0;
    for (Va va = start; va.v < end.v && rc == 0;) {
        const Va next{align_up(va.v + 1, level_span(Level::L2))};
        const Va stop = next.v < end.v ? next : end;
        Gpfn l1;
        if (find_l1(c, va, l1)) {   // no L1 yet: no page to change there
            const PteRange r{l1, table_index(va, Level::L1), unsigned((stop.v - va.v) >> kPageShift), va};
            SpinGuard pt(c, g.pte_lock(l1));
            rc = g.config.change_pte_range ? g.config.change_pte_range(c, r, prot, plan, g.config.change_pte_range_ctx)
                                           : change_pte_range(c, r, prot, plan);
        }
        va = stop;
    }
    // Once per call, and even after a failure: whatever was reduced is flushed.
    const int frc = flush_tlb(c, plan, vcpus());
    return rc ? rc : frc;
}

} // namespace pvmmu::guest
