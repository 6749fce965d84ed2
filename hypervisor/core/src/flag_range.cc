// MMU_FLAG_RANGE_UPDATE: each present entry of the range becomes
// (cur & ~M) | (N & M), installed with the cmd-2 compare-exchange loop so that A/D
// bits set meanwhile survive unless the mask covers them (docs/design.md §3).
//
// All-or-nothing without a window: every reference the request needs (writable
// type references for an RW raise) is taken before the first entry changes, and
// every reference it gives up is dropped after the last one changed. The only
// failure after the first install is a non-A/D change by a concurrent writer,
// which the per-page lock excludes; if it happens anyway the entries already
// changed are restored.
#include "core/flag_range.h"

namespace pvmmu {

namespace {

// An entry's new value from its current one; present entries stay user entries.
inline uint64_t apply(uint64_t cur, const abi::FlagRange& fr)
{
    const uint64_t nv = (cur & ~fr.mask) | fr.bits;
    return (nv & pte_bit::P) ? nv | pte_bit::US : nv;
}

// Undo the writable references taken for entries [first, end) of a raise.
void drop_raised(Hypervisor& hv, const uint64_t* before, unsigned first, unsigned end)
{
    for (unsigned i = first; i < end; ++i) {
        const Pte o{before[i]};
        if (o.present() && !o.writable()) put_page_type(hv, o.mfn());
    }
}

} // namespace

int flag_range_update(Hypervisor& hv, uint64_t* t, unsigned first, const abi::FlagRange& fr,
                      const MapContext& ctx)
{
    const unsigned end = first + fr.count;
    if (end > kEntriesPerTable) return -XEN_EINVAL;
    if (fr.bits & disallow::kL1) return -XEN_EINVAL;

    const bool clears_p = (fr.mask & pte_bit::P) && !(fr.bits & pte_bit::P);
    const bool to_rw = (fr.bits & pte_bit::RW) && !clears_p;
    const bool from_rw = (fr.mask & pte_bit::RW) && !(fr.bits & pte_bit::RW);

    // The values before the request: what references to drop, or what to restore.
    uint64_t before[kEntriesPerTable];

    // Pass 1: references for writable raises, before anything changes; each
    // raised frame's owner is checked again (core/pagetable.h get_raised_type).
    if (to_rw) {
        for (unsigned i = first; i < end; ++i) {
            before[i] = load_entry(&t[i]);
            const Pte o{before[i]};
            if (!o.present() || o.writable()) continue;
            if (int rc = get_raised_type(hv, o.mfn(), ctx)) {
                drop_raised(hv, before, first, i);
                return rc;
            }
        }
    }

    // Pass 2: install, present entries only.
    for (unsigned i = first; i < end; ++i) {
        std::atomic_ref<uint64_t> e(t[i]);
        uint64_t cur = e.load(std::memory_order_acquire);
        if (!(cur & pte_bit::P)) {
            before[i] = cur;
            continue;
        }
        const uint64_t seen = cur;
        while (!e.compare_exchange_weak(cur, apply(cur, fr), std::memory_order_acq_rel)) {
            if ((cur ^ seen) & ~pte_bit::AD) {
                // Not hardware: restore what this request changed, then fail.
                for (unsigned j = first; j < i; ++j) {
                    if (!(before[j] & pte_bit::P)) continue;
                    std::atomic_ref<uint64_t> r(t[j]);
                    uint64_t c = r.load(std::memory_order_acquire);
                    while (!r.compare_exchange_weak(c, (c & ~fr.mask) | (before[j] & fr.mask),
                                                    std::memory_order_acq_rel)) {
                    }
                }
                if (to_rw) drop_raised(hv, before, first, end);
                return -XEN_EBUSY;
            }
            hv.note_install_retry();
        }
        before[i] = cur;
    }

    // Pass 3: references the old values held and the new ones do not.
    if (clears_p || from_rw) {
        for (unsigned i = first; i < end; ++i) {
            const Pte o{before[i]};
            if (!o.present()) continue;
            if (clears_p) put_entry_refs(hv, Level::L1, o);
            else if (o.writable()) put_page_type(hv, o.mfn());
        }
    }
    return 0;
}

} // namespace pvmmu
