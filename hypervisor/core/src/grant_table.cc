// The grant table's own state: its frames, the maptrack's free list, and the
// pin of a shared entry (core/grant_table.h).
#include "core/grant_table.h"

#include "core/domain_teardown.h"
#include "core/refs.h"

namespace pvmmu {

namespace {

uint32_t min32(uint64_t a, uint64_t b) { return uint32_t(a < b ? a : b); }

// The flags and domid halves of a v1 entry, read and changed as one 32-bit
// word (flags in the low half on x86), as Xen's cmpxchg on them does: the
// guest writes the same word concurrently.
std::atomic_ref<uint32_t> header_word(grant_entry_v1_t* e)
{
    static_assert(offsetof(grant_entry_v1_t, flags) == 0 && offsetof(grant_entry_v1_t, domid) == 2);
    return std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(e));
}

// How many times a changing entry is read again before the pin gives up
// (Xen: "shared grant entry is unstable").
constexpr unsigned kPinRetries = 4;

} // namespace

GrantTable::GrantTable(DomId owner, const GrantLimits& limits, const GrantStorage& s)
    : owner_(owner), frames_(s.frames), active_(s.active), maptrack_(s.maptrack),
      max_frames_(min32(limits.max_grant_frames, s.nr_frames)),
      max_handles_(min32(uint64_t(limits.max_maptrack_frames) * gnt::kHandlesPerMaptrackFrame, s.nr_maptrack))
{
}

grant_entry_v1_t* GrantTable::entry(Hypervisor& hv, grant_ref_t ref) const
{
    auto* base = static_cast<grant_entry_v1_t*>(hv.mem().frame(frames_[ref / gnt::kEntriesPerFrame]));
    return base + ref % gnt::kEntriesPerFrame;
}

int16_t GrantTable::grow(Hypervisor& hv, uint32_t n)
{
    if (n > max_frames_ || dying_) return GNTST_general_error;
    uint32_t i = nr_frames_;
    for (; i < n; ++i) {
        if (get_page_and_type(hv, frames_[i], owner_, PageType::Writable)) break;
    }
    if (i < n) {
        while (i-- > nr_frames_) put_page_and_type(hv, frames_[i]);
        return GNTST_general_error;
    }
    // New entries start invalid, as Xen gives out zeroed frames.
    for (i = nr_frames_; i < n; ++i) {
        auto* words = static_cast<uint64_t*>(hv.mem().frame(frames_[i]));
        for (uint32_t k = 0; k < kPageSize / sizeof(uint64_t); ++k) std::atomic_ref<uint64_t>(words[k]).store(0);
        for (uint32_t k = 0; k < gnt::kEntriesPerFrame; ++k) active_[i * gnt::kEntriesPerFrame + k] = ActiveGrant{};
    }
    if (n > nr_frames_) nr_frames_ = n;
    return GNTST_okay;
}

int64_t GrantTable::reserve_handle()
{
    uint32_t h;
    if (free_head_ != ~0u) {
        h = free_head_;
        free_head_ = maptrack_[h].next_free;
    } else if (handle_limit_ < max_handles_) {
        h = handle_limit_++;
    } else {
        return -1;
    }
    maptrack_[h] = MapTrack{};
    maptrack_[h].state = MapTrack::State::Reserved;
    return h;
}

void GrantTable::free_handle(uint32_t h)
{
    maptrack_[h] = MapTrack{};
    maptrack_[h].next_free = free_head_;
    free_head_ = h;
}

void GrantTable::release_frames(Hypervisor& hv)
{
    if (!frames_held_) return;
    for (uint32_t r = 0; r < nr_entries(); ++r)
        if (active_[r].pinned()) return;
    for (uint32_t i = 0; i < nr_frames_; ++i) put_page_and_type(hv, frames_[i]);
    frames_held_ = false;
}

bool GrantTable::keep_until_unpinned()
{
    relinquish_on_unpin_ = nr_pinned_ != 0;
    return relinquish_on_unpin_;
}

int16_t grant_pin(Hypervisor& hv, GrantTable& gt, DomId ld, grant_ref_t ref, bool readonly, Mfn& frame)
{
    if (gt.dying()) return GNTST_general_error;
    if (ref >= gt.nr_entries()) return GNTST_bad_gntref;
    ActiveGrant& a = gt.active(ref);
    const bool pinned = a.pinned();
    // One domain at a time, and no count that could overflow Xen's.
    if (pinned && (a.domid != ld || a.ro >= gnt::kMaxPins || a.rw >= gnt::kMaxPins)) return GNTST_general_error;
    grant_entry_v1_t* e = gt.entry(hv, ref);
    uint16_t set = 0;
    if (!pinned || (!readonly && a.rw == 0)) {
        std::atomic_ref<uint32_t> w = header_word(e);
        unsigned tries = 0;
        uint32_t cur = w.load(std::memory_order_acquire);
        for (;;) {
            const uint16_t flags = uint16_t(cur);
            const DomId domid = DomId(cur >> 16);
            if ((flags & GTF_type_mask) != GTF_permit_access || domid != ld) return GNTST_general_error;
            if (!readonly && (flags & GTF_readonly)) return GNTST_general_error;
            set = uint16_t(GTF_reading | (readonly ? 0 : GTF_writing)) & ~flags;
            if (w.compare_exchange_strong(cur, cur | set, std::memory_order_acq_rel)) break;
            if (++tries == kPinRetries) return GNTST_general_error;
        }
    }
    if (!pinned) {
        const Mfn m{std::atomic_ref<uint32_t>(e->frame).load(std::memory_order_acquire)};
        if (!hv.mem().valid(m) || hv.frame(m).owner.load(std::memory_order_acquire) != gt.owner()) {
            // Back to the flags the entry had (Xen: unlock_out_clear).
            std::atomic_ref<uint16_t>(e->flags).fetch_and(uint16_t(~set), std::memory_order_acq_rel);
            return GNTST_bad_page;
        }
        a.frame = m;
        a.domid = ld;
        ++gt.nr_pinned_;
    }
    if (readonly) ++a.ro;
    else ++a.rw;
    frame = a.frame;
    return GNTST_okay;
}

bool grant_unpin(Hypervisor& hv, GrantTable& gt, grant_ref_t ref, bool readonly)
{
    ActiveGrant& a = gt.active(ref);
    if (readonly) --a.ro;
    else --a.rw;
    uint16_t clear = 0;
    if (!readonly && a.rw == 0) clear |= GTF_writing;
    if (!a.pinned()) clear |= GTF_reading;
    if (clear) std::atomic_ref<uint16_t>(gt.entry(hv, ref)->flags).fetch_and(uint16_t(~clear), std::memory_order_acq_rel);
    if (a.pinned() || --gt.nr_pinned_ || !gt.relinquish_on_unpin_) return false;
    gt.relinquish_on_unpin_ = false;   // once: no pin can come back (dying)
    return true;
}

void grant_relinquish_owner(Hypervisor& hv, const GrantTable& gt)
{
    if (Domain* d = hv.domain(gt.owner())) (void)relinquish_domain(hv, *d);
}

} // namespace pvmmu
