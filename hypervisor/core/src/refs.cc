// Frame reference counting and the type state machine; see core/refs.h and
// docs/architecture.md ("Frame types").
#include "core/refs.h"

#include "core/pagetable.h"

namespace pvmmu {

int get_page(Hypervisor& hv, Mfn m, DomId owner)
{
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    FrameInfo& f = hv.frame(m);
    if (f.owner.load(std::memory_order_acquire) != owner) return -XEN_EPERM;
    uint32_t c = f.count.load(std::memory_order_relaxed);
    do {
        if (c >= ti::kCountLimit) return -XEN_EOVERFLOW;
    } while (!f.count.compare_exchange_weak(c, c + 1, std::memory_order_seq_cst));
    hv.race_point(RacePoint::GetPageCounted, m);
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

void put_page(Hypervisor& hv, Mfn m)
{
    hv.frame(m).count.fetch_sub(1, std::memory_order_acq_rel);
}

// Before a frame changes type, no TLB may still hold a translation from its old
// use (SPEC §4): flush every CPU that has not flushed since the frame was stamped.
static void flush_before_type_change(Hypervisor& hv, FrameInfo& f)
{
    const CpuMask stale = hv.clock().needing_flush(hv.online_cpus(),
                                                   f.tlbflush_stamp.load(std::memory_order_acquire));
    if (!stale.empty()) hv.platform().flush_tlbs(stale, FlushRequest{});
}

int get_page_type(Hypervisor& hv, Mfn m, PageType t)
{
    FrameInfo& f = hv.frame(m);
    uint64_t x = f.type_info.load(std::memory_order_acquire);
    for (;;) {
        // A conflicting type in use fails at once, even mid-validation: a table
        // that maps itself (writable, or as the wrong level) must not wait on itself.
        if (ti::count(x) != 0 && ti::type(x) != t) return -XEN_EINVAL;
        if (x & ti::kBusy) {          // another CPU is (de)validating or stamping: wait for it
            hv.platform().relax();
            x = f.type_info.load(std::memory_order_acquire);
            continue;
        }
        uint64_t nx;
        const bool change = ti::count(x) == 0 && ti::type(x) != t;
        if (ti::count(x) == 0) {
            nx = change ? ti::with_type(t) | (x & ti::kPinned) | 1 : x + 1;
            // Busy while the type changes (flush) or a table is validated.
            if (change || is_table_type(t)) nx = (nx & ~ti::kValidated) | ti::kBusy;
            else nx |= ti::kValidated;
        } else {
            if (ti::count(x) >= ti::kCountLimit) return -XEN_EOVERFLOW;
            nx = x + 1;
        }
        if (f.type_info.compare_exchange_weak(x, nx, std::memory_order_acq_rel)) {
            if (!(nx & ti::kBusy)) return 0;
            // Flush only now that the new type is in place: before the exchange,
            // another CPU could still take and drop a reference of the old type
            // and leave a translation behind that the flush would miss (the race
            // of Xen's XSA-401). From here on no such reference can be taken.
            if (change) flush_before_type_change(hv, f);
            if (!is_table_type(t)) {
                f.type_info.fetch_xor(ti::kBusy | ti::kValidated, std::memory_order_acq_rel);
                return 0;
            }
            // First reference of a table type: validate while others wait on kBusy.
            const int rc = validate_table(hv, m, Level(uint8_t(t)));
            if (rc == 0) {
                f.type_info.fetch_xor(ti::kBusy | ti::kValidated, std::memory_order_acq_rel);
            } else {
                // Back to the word before this reference (count 0, the old type): a
                // failed request changes nothing (SPEC §3). Nobody else changes it
                // while kBusy is set and the count is ours.
                f.type_info.store(x, std::memory_order_release);
            }
            return rc;
        }
    }
}

void put_page_type(Hypervisor& hv, Mfn m)
{
    FrameInfo& f = hv.frame(m);
    uint64_t x = f.type_info.load(std::memory_order_acquire);
    for (;;) {
        if (ti::count(x) != 1) {
            if (f.type_info.compare_exchange_weak(x, x - 1, std::memory_order_acq_rel)) return;
            continue;
        }
        // Last reference: the drop leaves the frame busy until it is stamped,
        // and the stamp is read from the clock only after the drop. A stamp
        // taken before the exchange could be older than a mapping made and
        // removed in between (the count going 1 -> 2 -> 1 leaves the word as
        // it was, so the exchange still succeeds), and a CPU that flushed and
        // cached that mapping in the gap would be skipped by the type change.
        // A type change waits while the frame is busy, so it reads this stamp
        // (docs/security.md §7.5).
        const bool table = is_table_type(ti::type(x));
        const uint64_t nx = (table ? (x - 1) & ~ti::kValidated : x - 1) | ti::kBusy;
        hv.race_point(RacePoint::LastTypeDrop, m);
        if (!f.type_info.compare_exchange_weak(x, nx, std::memory_order_acq_rel)) continue;
        // A table's entries go first: CPUs may walk it until they do.
        if (table) devalidate_table(hv, m, Level(uint8_t(ti::type(x))));
        f.tlbflush_stamp.store(hv.clock().now(), std::memory_order_release);
        f.type_info.fetch_and(~ti::kBusy, std::memory_order_acq_rel);
        return;
    }
}

unsigned get_existing_table(Hypervisor& hv, Mfn m, DomId owner)
{
    if (!hv.mem().valid(m)) return 0;
    FrameInfo& f = hv.frame(m);
    if (f.owner.load(std::memory_order_acquire) != owner) return 0;
    uint64_t x = f.type_info.load(std::memory_order_acquire);
    for (;;) {
        const PageType t = ti::type(x);
        if (!is_table_type(t) || !(x & ti::kValidated) || ti::count(x) == 0 ||
            ti::count(x) >= ti::kCountLimit)
            return 0;
        if (f.type_info.compare_exchange_weak(x, x + 1, std::memory_order_acq_rel))
            return unsigned(t);
    }
}

} // namespace pvmmu
