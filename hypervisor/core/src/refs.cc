// Frame reference counting and the type state machine; see core/refs.h and
// docs/architecture.md ("Frame types").
#include "core/refs.h"

#include "core/pagetable.h"
#include "get_page.h"
#include "race_site.h"

namespace pvmmu {

int get_page(Hypervisor& hv, Mfn m, DomId owner) { return get_page_inline(hv, m, owner); }

void put_page(Hypervisor& hv, Mfn m)
{
    hv.frame(m).count.fetch_sub(1, std::memory_order_acq_rel);
}

// Before a frame changes type, no TLB may still hold a translation from its old
// use (docs/design.md §4): flush every CPU that has not flushed since the frame was stamped.
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
                // failed request changes nothing (docs/design.md §3). Nobody else changes it
                // while kBusy is set and the count is ours.
                f.type_info.store(x, std::memory_order_release);
            }
            return rc;
        }
    }
}

// The end of a type's last drop (put_page_type): the exchange has left the
// frame busy with no type reference; stamp it, then clear busy.
//
// Busy goes by a plain store, not a second locked RMW: while the frame is busy
// with no type reference, nothing else changes the word. get_page_type and
// get_writable_type wait while it is busy (their exchanges expect a word
// without kBusy); put_page_type and get_existing_table need a type reference,
// and none is left. The pin bit is set only by one holding a type reference
// (pin, the domain builder) and cleared only while the pin's own reference is
// still held (unpin, teardown), so it is clear here; the fetch_and of an unpin
// or a teardown that finds it clear writes back the word it read, nx, and
// whichever of it and this store comes last leaves nx without kBusy. Release:
// whoever sees the frame no longer busy sees the stamp (and a table's
// devalidated entries).
static void end_last_drop(Hypervisor& hv, FrameInfo& f, uint64_t nx)
{
    f.tlbflush_stamp.store(hv.clock().now(), std::memory_order_release);
    f.type_info.store(nx & ~ti::kBusy, std::memory_order_release);
}

// A table's last drop, once its frame is busy: its entries go first, since
// CPUs may walk it until they do. Out of line and reached by a tail call, so
// that put_page_type itself makes no call and dropping a writable reference
// saves and restores no registers (docs/results.md §1).
[[gnu::noinline]] static void end_last_table_drop(Hypervisor& hv, Mfn m, Level level, uint64_t nx)
{
    devalidate_table(hv, m, level);
    end_last_drop(hv, hv.frame(m), nx);
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
        race_point(hv, RacePoint::LastTypeDrop, m);
        if (!f.type_info.compare_exchange_weak(x, nx, std::memory_order_acq_rel)) continue;
        if (table) return end_last_table_drop(hv, m, Level(uint8_t(ti::type(x))), nx);
        end_last_drop(hv, f, nx);
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
