// Grant table invariants; see grant_invariants.h and core/grant_table.h.
#include "grant_invariants.h"

#include "core/grant_table.h"

namespace pvmmu {

namespace {

constexpr uint32_t kNoIndex = Violation::kNoIndex;

const GrantTable* table_of(const Hypervisor& hv, DomId id)
{
    const Domain* d = const_cast<Hypervisor&>(hv).domain(id);
    return d ? d->grants : nullptr;
}

// Live mappings, over every domain's maptrack, of `granter`'s ref.
void count_mappings(const Hypervisor& hv, DomId granter, grant_ref_t ref, uint32_t& ro, uint32_t& rw)
{
    ro = rw = 0;
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const GrantTable* gt = table_of(hv, id);
        if (!gt) continue;
        for (uint32_t h = 0; h < gt->handle_limit(); ++h) {
            const MapTrack& e = gt->map(h);
            if (e.state != MapTrack::State::Live || e.granter != granter || e.ref != ref) continue;
            ++(e.readonly() ? ro : rw);
        }
    }
}

void check_table_frames(Hypervisor& hv, const GrantTable& gt, FrameTally* tally, InvariantReport& r)
{
    if (!gt.frames_held()) return;
    for (uint32_t i = 0; i < gt.nr_frames(); ++i) {
        const Mfn m = gt.frame(i);
        if (!hv.mem().valid(m)) {
            r.add(m, kNoIndex, "grant table frame beyond machine memory", 0, m.v);
            continue;
        }
        const FrameInfo& f = hv.frame(m);
        if (f.owner.load(std::memory_order_acquire) != gt.owner() || f.type() != PageType::Writable)
            r.add(m, kNoIndex, "grant table frame not a writable frame of its domain", gt.owner(),
                  f.type_info.load(std::memory_order_acquire));
        ++tally[m.v].general;
        ++tally[m.v].type;
    }
}

void check_maptrack(Hypervisor& hv, const GrantTable& gt, InvariantReport& r)
{
    for (uint32_t h = 0; h < gt.handle_limit(); ++h) {
        const MapTrack& e = gt.map(h);
        if (e.state == MapTrack::State::Free) continue;
        if (e.state != MapTrack::State::Live) {
            r.add(e.l1, h, "maptrack entry left mid-operation", 0, uint64_t(e.state));
            continue;
        }
        const GrantTable* rgt = table_of(hv, e.granter);
        if (!rgt) {
            r.add(e.frame, h, "grant mapping of a domain without a grant table", 0, e.granter);
            continue;
        }
        if (e.ref >= rgt->nr_entries()) {
            r.add(e.frame, h, "grant mapping of a reference beyond the granter's table", rgt->nr_entries(), e.ref);
            continue;
        }
        const ActiveGrant& a = rgt->active(e.ref);
        if (!a.pinned() || a.domid != gt.owner() || !(a.frame == e.frame))
            r.add(e.frame, h, "grant mapping whose entry is not pinned for it", gt.owner(), a.domid);
    }
}

void check_active(Hypervisor& hv, const GrantTable& gt, InvariantReport& r)
{
    uint32_t pinned = 0;
    for (grant_ref_t ref = 0; ref < gt.nr_entries(); ++ref) {
        const ActiveGrant& a = gt.active(ref);
        if (!a.pinned()) continue;
        ++pinned;
        uint32_t ro, rw;
        count_mappings(hv, gt.owner(), ref, ro, rw);
        const Mfn where = gt.frame(ref / gnt::kEntriesPerFrame);
        if (ro != a.ro || rw != a.rw)
            r.add(where, ref, "grant pins differ from the mappings that hold them",
                  (uint64_t(a.ro) << 32) | a.rw, (uint64_t(ro) << 32) | rw);
        const uint16_t flags = std::atomic_ref<uint16_t>(gt.entry(hv, ref)->flags).load(std::memory_order_acquire);
        if (!(flags & GTF_reading)) r.add(where, ref, "pinned grant without GTF_reading", GTF_reading, flags);
        if (bool(flags & GTF_writing) != (a.rw != 0))
            r.add(where, ref, "grant's GTF_writing differs from its writable pins", a.rw, flags);
    }
    // The count a torn-down granter waits on (core/grant_table.h
    // grant_unpin): wrong, its kept frames would go early or never.
    if (pinned != gt.nr_pinned())
        r.add(gt.nr_frames() ? gt.frame(0) : Mfn{0}, kNoIndex,
              "grant table's count of pinned entries differs from its entries", pinned, gt.nr_pinned());
}

} // namespace

bool grant_explains_entry(const Hypervisor& hv, DomId self, Mfn t, uint32_t i, Pte e)
{
    const GrantTable* gt = table_of(hv, self);
    if (!gt) return false;
    for (uint32_t h = 0; h < gt->handle_limit(); ++h) {
        const MapTrack& m = gt->map(h);
        if (m.state == MapTrack::State::Live && m.l1 == t && m.index == i && m.frame == e.mfn() &&
            (!e.writable() || !m.readonly()))
            return true;
    }
    return false;
}

void check_grants(Hypervisor& hv, FrameTally* tally, InvariantReport& r)
{
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const GrantTable* gt = table_of(hv, id);
        if (!gt) continue;
        check_table_frames(hv, *gt, tally, r);
        check_maptrack(hv, *gt, r);
        check_active(hv, *gt, r);
    }
}

} // namespace pvmmu
