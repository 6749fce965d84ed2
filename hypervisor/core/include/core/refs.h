// Reference counting on frames (docs/design.md §4): general references (a mapping or a use
// of the frame) and type references (a writable mapping, a link from the next
// table level up, a pin, a base pointer). Taking the first reference of a
// page-table type validates the table; dropping the last one devalidates it.
// Every function returns 0 or a negative Xen errno.
#pragma once

#include <pvmmu/abi.h>

#include "core/hypervisor.h"

namespace pvmmu {

// General reference on a frame owned by `owner`. -EPERM if someone else owns it.
[[nodiscard]] int get_page(Hypervisor& hv, Mfn m, DomId owner);
void put_page(Hypervisor& hv, Mfn m);

// Type reference. For a page-table type the first reference validates the table
// (taking references for its entries); for any type change the TLBs that may
// still hold the frame's old use are flushed first. -EINVAL on a type conflict.
[[nodiscard]] int get_page_type(Hypervisor& hv, Mfn m, PageType t);
void put_page_type(Hypervisor& hv, Mfn m);

// A type reference on a frame that already is a validated table of some level,
// without changing or validating anything: what a writer of that table holds.
// emulate_pt_write's HeldL1 (core/src/pt_write.cc) takes the same reference
// inline for an L1 and drops it as put_page_type does: a rule changed here
// changes there too.
// Returns the level, or 0 if the frame is no validated table owned by `owner`.
[[nodiscard]] unsigned get_existing_table(Hypervisor& hv, Mfn m, DomId owner);

// get_page_type(m, Writable) with its common case inline: the frame is already
// typed writable and not being (de)validated, so the reference is one
// compare-exchange and no type changes (docs/design.md §4 "Cost": an RW raise's only
// per-frame atomic). Every other case takes the full path. This is
// get_page_type's case "count 0 or more, type unchanged": keep the two in step.
[[nodiscard]] inline int get_writable_type(Hypervisor& hv, Mfn m)
{
    std::atomic<uint64_t>& word = hv.frame(m).type_info;
    uint64_t x = word.load(std::memory_order_acquire);
    if (ti::type(x) == PageType::Writable && !(x & ti::kBusy) && ti::count(x) < ti::kCountLimit) {
        // As get_page_type: the first reference (re)marks a non-table type validated.
        const uint64_t nx = ti::count(x) == 0 ? (x + 1) | ti::kValidated : x + 1;
        if (word.compare_exchange_strong(x, nx, std::memory_order_acq_rel)) return 0;
    }
    return get_page_type(hv, m, PageType::Writable);
}

// put_page_type with its common case inline: a type reference that is not
// the frame's last, one compare-exchange and no call (put_page_type's first
// case: keep the two in step). The last one takes the full path.
inline void put_page_type_inline(Hypervisor& hv, Mfn m)
{
    std::atomic<uint64_t>& word = hv.frame(m).type_info;
    uint64_t x = word.load(std::memory_order_acquire);
    if (ti::count(x) != 1 && word.compare_exchange_strong(x, x - 1, std::memory_order_acq_rel)) return;
    put_page_type(hv, m);
}

[[nodiscard]] inline int get_page_and_type(Hypervisor& hv, Mfn m, DomId owner, PageType t)
{
    if (int rc = get_page(hv, m, owner)) return rc;
    if (int rc = get_page_type(hv, m, t)) {
        put_page(hv, m);
        return rc;
    }
    return 0;
}

inline void put_page_and_type(Hypervisor& hv, Mfn m)
{
    put_page_type(hv, m);
    put_page(hv, m);
}

// The hypervisor keeps frame m of domain d writable for itself (Domain::held):
// a general and a writable type reference, so m cannot become a page table.
// 0, -ENOSPC when d holds kMaxHeld already, or get_page_and_type's error.
[[nodiscard]] inline int hold_writable(Hypervisor& hv, Domain& d, Mfn m)
{
    if (d.nr_held == Domain::kMaxHeld) return -XEN_ENOSPC;
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    if (int rc = get_page_and_type(hv, m, d.id, PageType::Writable)) return rc;
    d.held[d.nr_held++] = m;
    return 0;
}

} // namespace pvmmu
