// Domain teardown; see core/domain_teardown.h.
#include "core/domain_teardown.h"

#include "core/event_ops.h"
#include "core/events.h"
#include "core/grant_table.h"
#include "core/refs.h"
#include "race_site.h"

namespace pvmmu {

namespace {

// Frame m of domain d becomes free if nothing references it. get_page raises
// the count and then reads the owner again; this is the mirror order, owner
// first and counts second, all seq_cst, so a racing get_page either sees the
// frame gone and drops its reference, or holds it and is seen here, and the
// frame stays d's (docs/security.md §7.6). A reference that get_page drops
// again can still be seen: the frame is then kept, the safe way to be wrong,
// and relinquish_domain tries it again. Type references come on top of a
// general one (get_existing_table needs a type count that is already
// raised), so the general count stands for both.
bool give_back(Hypervisor& hv, Mfn m, DomId d)
{
    FrameInfo& f = hv.frame(m);
    f.owner.store(kOwnerFree, std::memory_order_seq_cst);
    race_point(hv, RacePoint::TeardownGiveBack, m);
    if (f.count.load(std::memory_order_seq_cst) == 0 && f.type_count() == 0) return true;
    // Back to d, unless someone took the frame as free meanwhile (it saw no
    // reference, so it is given back after all).
    DomId seen = kOwnerFree;
    return !f.owner.compare_exchange_strong(seen, d, std::memory_order_seq_cst);
}

// Passes over frames kept without a reference, after the first: each can
// only keep a frame again for yet another reference taken and dropped just
// then, so a few suffice; bounded, since each scans the whole frame table.
constexpr unsigned kRetryPasses = 3;

} // namespace

namespace {

TeardownResult relinquish_once(Hypervisor& hv, Domain& d, uint32_t& last_pins)
{
    // Its CPUs flushed if it maps others' grants, and its own table dying,
    // its frames let go unless pinned (core/grant_table.h).
    grant_teardown(hv, d);
    // Its event channels close; their other ends in other domains are
    // unbound again (core/event_ops.h).
    evtchn_teardown(hv, d);
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        Vcpu& v = d.vcpus[i];
        if (v.has_table) put_page_and_type(hv, v.guest_table);
        if (v.has_user_table) put_page_and_type(hv, v.guest_table_user);
        v.has_table = v.has_user_table = false;
    }
    if (d.events) release_event_frames(hv, *d.events);   // the FIFO ABI's frames
    for (unsigned i = 0; i < d.nr_held; ++i) put_page_and_type(hv, d.held[i]);
    d.nr_held = 0;
    // Unpin as MMUEXT_UNPIN_TABLE does. A table's last type reference going
    // devalidates it, which drops the references its entries hold, down to
    // the frames its L1s map: with no pins and no base pointers nothing of
    // the domain is left referenced (links only go down a level, and linear
    // page tables are refused), whatever order the pins go in.
    const uint64_t n = hv.mem().nr_frames;
    for (uint64_t i = 0; i < n; ++i) {
        FrameInfo& f = hv.frame(Mfn{i});
        if (f.owner.load(std::memory_order_acquire) != d.id) continue;
        if (f.type_info.fetch_and(~ti::kPinned, std::memory_order_acq_rel) & ti::kPinned) put_page_and_type(hv, Mfn{i});
    }
    // Its tables gone, and with them the references of its mappings of
    // others' grants: their pins go now, not before, so that a granter
    // whose teardown then finds no pin left finds their frames
    // unreferenced (its own second pass gives them back; nothing else
    // would).
    last_pins |= grant_release_pins(hv, d);
    TeardownResult r;
    for (uint64_t i = 0; i < n; ++i) {
        if (hv.frame(Mfn{i}).owner.load(std::memory_order_acquire) != d.id) continue;
        if (give_back(hv, Mfn{i}, d.id)) ++r.freed;
        else ++r.kept;
    }
    // A frame kept for a get_page that then found it free and dropped its
    // reference is referenced by nothing, yet nothing would try it again: a
    // peer merely trying to map the domain's frames could keep the domain
    // registered for good. Such frames get more passes.
    for (unsigned pass = 0; pass < kRetryPasses && r.kept; ++pass) {
        bool tried = false;
        for (uint64_t i = 0; i < n; ++i) {
            const FrameInfo& f = hv.frame(Mfn{i});
            if (f.owner.load(std::memory_order_acquire) != d.id ||
                f.count.load(std::memory_order_acquire) != 0 || f.type_count() != 0)
                continue;
            tried = true;
            if (give_back(hv, Mfn{i}, d.id)) {
                ++r.freed;
                --r.kept;
            }
        }
        if (!tried) break;
    }
    d.nr_frames = r.kept;
    if (!r.kept) hv.remove_domain(d);
    return r;
}

// Torn-down granters whose last pin d's teardown released: their turn,
// now that d's tables no longer reference their frames.
void relinquish_granters(Hypervisor& hv, uint32_t last_pins)
{
    for (DomId id = 0; id < kMaxDomains; ++id)
        if (last_pins & 1u << id)
            if (Domain* g = hv.domain(id)) (void)relinquish_domain(hv, *g);
}

} // namespace

TeardownResult relinquish_domain(Hypervisor& hv, Domain& d)
{
    uint32_t last_pins = 0;
    TeardownResult r = relinquish_once(hv, d, last_pins);
    relinquish_granters(hv, last_pins);
    if (!r.kept || !d.grants) return r;
    // Frames kept while other domains pin d's grants: the last unpin runs
    // this again (core/grant_table.h grant_unpin). If the pins all went
    // while this pass ran, it found them referenced: once more, here. Every
    // step above is a no-op the second time, and no pin can come back (the
    // table is dying), so the passes end.
    bool pinned;
    {
        LockGuard g(d.grants->lock, hv.platform());
        pinned = d.grants->keep_until_unpinned();
    }
    if (pinned) return r;
    last_pins = 0;
    const TeardownResult again = relinquish_once(hv, d, last_pins);
    relinquish_granters(hv, last_pins);   // none: d's pins all went in the first pass
    r.freed += again.freed;
    r.kept = again.kept;
    return r;
}

} // namespace pvmmu
