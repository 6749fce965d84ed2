// get_page's body (core/refs.h), inline where an entry's references are
// taken (pagetable.cc: get_entry_refs, a copy-on-write's new frame;
// validate_table, a pin's 512) and where a table not yet pinned is written
// (mmu_update.cc plain_update, a fork's child entries), and out of line in
// refs.cc for everyone else: one definition of the rule either way.
#pragma once

#include "core/refs.h"
#include "race_site.h"

namespace pvmmu {

inline int get_page_inline(Hypervisor& hv, Mfn m, DomId owner)
{
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    FrameInfo& f = hv.frame(m);
    if (f.owner.load(std::memory_order_acquire) != owner) return -XEN_EPERM;
    uint32_t c = f.count.load(std::memory_order_relaxed);
    do {
        if (c >= ti::kCountLimit) return -XEN_EOVERFLOW;
    } while (!f.count.compare_exchange_weak(c, c + 1, std::memory_order_seq_cst));
    race_point(hv, RacePoint::GetPageCounted, m);
    // The owner changes only while the count is zero; recheck now that we hold
    // one. Count first, owner second; whoever gives the frame away does the
    // mirror (owner first, count second: domain_teardown.cc), all seq_cst, so
    // of the two at least one sees the other.
    if (f.owner.load(std::memory_order_seq_cst) != owner) {
        put_page(hv, m);
        return -XEN_EPERM;
    }
    return 0;
}

} // namespace pvmmu
