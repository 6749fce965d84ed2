// Invariant checker; see core/invariants.h. The reference rules it recounts are
// those of pagetable.cc (get_entry_refs), mmuext.cc (pin, new_baseptr) and the
// domain builder: an L1 entry holds a general reference and, if RW, a writable
// type reference; an L2-L4 entry a general and a type reference of the next
// lower level; a pin and a base pointer each a general and a type reference.
#include "core/invariants.h"

#include "core/events.h"

#include "core/pagetable.h"
#include "grant_invariants.h"

namespace pvmmu {

namespace {

constexpr uint32_t kNoIndex = Violation::kNoIndex;

struct Checker {
    Hypervisor& hv;
    FrameTally* tally;
    InvariantReport& r;

    bool valid(Mfn m) const { return hv.mem().valid(m); }
    void fail(Mfn m, uint32_t i, const char* why, uint64_t expected = 0, uint64_t actual = 0)
    {
        r.add(m, i, why, expected, actual);
    }

    // One frame on its own: the type_info word and the owner. Returns the word.
    uint64_t frame_state(Mfn m, uint64_t* owned)
    {
        const FrameInfo& f = hv.frame(m);
        const uint64_t x = f.type_info.load(std::memory_order_acquire);
        const PageType t = ti::type(x);
        const DomId o = f.owner.load(std::memory_order_acquire);
        const bool table = is_table_type(t);
        if (x & ti::kBusy) fail(m, kNoIndex, "frame left mid-(de)validation (busy)", 0, x);
        if (f.lock.locked()) fail(m, kNoIndex, "page-table page lock held between hypercalls");
        if (uint8_t(t) > uint8_t(PageType::Writable)) fail(m, kNoIndex, "undefined page type", 0, x);
        if (t == PageType::None && ti::count(x)) fail(m, kNoIndex, "type none with type references", 0, ti::count(x));
        if (table && ti::count(x) && !(x & ti::kValidated))
            fail(m, kNoIndex, "page table in use but not validated", 0, x);
        if (table && !ti::count(x) && (x & ti::kValidated))
            fail(m, kNoIndex, "validated page table without type references", 0, x);
        if ((x & ti::kPinned) && !(table && (x & ti::kValidated)))
            fail(m, kNoIndex, "pinned frame is not a validated page table", 0, x);
        if (o < kMaxDomains && hv.domain(o)) {
            ++owned[o];
        } else if (o == kOwnerXen || o == kOwnerFree) {
            // Nothing a guest holds may name them (docs/design.md §4: never hypervisor frames).
            if (f.count.load() || ti::count(x))
                fail(m, kNoIndex, o == kOwnerXen ? "hypervisor frame is referenced" : "free frame is referenced",
                     0, f.count.load());
        } else if (o != kOwnerIo) {
            fail(m, kNoIndex, "frame owned by an unknown domain", 0, o);
        }
        if (table && ti::count(x) && !(o < kMaxDomains && hv.domain(o)))
            fail(m, kNoIndex, "page table not owned by a domain", 0, o);
        return x;
    }

    // Who may appear in an L1 entry of a table owned by `self` (docs/design.md §4).
    void l1_target(Mfn t, uint32_t i, DomId self, Pte e)
    {
        const Mfn m = e.mfn();
        const FrameInfo& f = hv.frame(m);
        const DomId o = f.owner.load(std::memory_order_acquire);
        if (o == kOwnerXen) {
            fail(t, i, "hypervisor frame mapped", m.v, e.v);
        } else if (o != self && !(o < kMaxDomains && hv.domain(o)) && o != kOwnerIo) {
            fail(t, i, "frame without a domain owner mapped", m.v, e.v);
        } else if (o != self && !hv.domain(self)->policy.allows(Perm::MapForeign) &&
                   !(o != kOwnerIo && grant_explains_entry(hv, self, t, i, e))) {
            fail(t, i, o == kOwnerIo ? "I/O frame mapped without privilege"
                                     : "foreign frame mapped without privilege", m.v, e.v);
        }
        ++tally[m.v].general;
        if (!e.writable()) return;
        ++tally[m.v].type;
        // A frame can be mapped writable only while its type is writable.
        const PageType mt = f.type();
        if (is_table_type(mt)) fail(t, i, "page-table frame mapped writable", m.v, e.v);
        else if (mt != PageType::Writable) fail(t, i, "writable mapping of a frame not typed writable", m.v, e.v);
    }

    // L2-L4: a validated table of the next lower level of the same domain.
    void link_target(Mfn t, uint32_t i, DomId self, Level level, Pte e)
    {
        const Mfn m = e.mfn();
        const FrameInfo& f = hv.frame(m);
        const uint64_t x = f.type_info.load(std::memory_order_acquire);
        if (f.owner.load(std::memory_order_acquire) != self)
            fail(t, i, "link to a frame of another owner", m.v, e.v);
        else if (ti::type(x) != table_type(Level(uint8_t(level) - 1)))
            fail(t, i, "link to a frame that is no table of the next lower level", m.v, e.v);
        else if (!(x & ti::kValidated))
            fail(t, i, "link to a table that is not validated", m.v, e.v);
        ++tally[m.v].general;
        ++tally[m.v].type;
    }

    // Every entry of one validated table.
    void table(Mfn t, Level level)
    {
        const DomId self = hv.frame(t).owner.load(std::memory_order_acquire);
        if (!(self < kMaxDomains && hv.domain(self))) return;   // reported by frame_state
        ++r.tables;
        uint64_t* e = hv.mem().table(t);
        for (uint32_t i = 0; i < kEntriesPerTable; ++i) {
            const Pte p{load_entry(&e[i])};
            if (level == Level::L4 && hv.l4_slot_reserved(i)) {
                const uint64_t want = hv.platform().reserved_l4_entry(self, i);
                if (p.v != want) fail(t, i, "hypervisor L4 slot not the platform's entry", want, p.v);
                continue;
            }
            if (!p.present()) continue;
            ++r.entries;
            if (!entry_flags_ok(level, p)) fail(t, i, "disallowed flag bits in a present entry", 0, p.v);
            if (!(p.v & pte_bit::US)) fail(t, i, "present entry without US (not adjusted)", 0, p.v);
            if (!valid(p.mfn())) {
                fail(t, i, "entry names a frame beyond machine memory", 0, p.v);
                continue;
            }
            if (level == Level::L1) l1_target(t, i, self, p);
            else link_target(t, i, self, level, p);
        }
    }

    // A frame the hypervisor holds writable for itself: a general and a
    // writable type reference, on a frame of that domain typed writable.
    void held(Mfn m, DomId self)
    {
        if (!valid(m)) {
            fail(m, kNoIndex, "held frame beyond machine memory", 0, m.v);
            return;
        }
        const FrameInfo& f = hv.frame(m);
        const uint64_t x = f.type_info.load(std::memory_order_acquire);
        if (f.owner.load(std::memory_order_acquire) != self || ti::type(x) != PageType::Writable)
            fail(m, kNoIndex, "held frame not a writable frame of its domain", self, x);
        ++tally[m.v].general;
        ++tally[m.v].type;
    }

    // A pin or a base pointer: a general and a type reference.
    void root(Mfn m, DomId self, bool l4_only, const char* what)
    {
        if (!valid(m)) {
            fail(m, kNoIndex, what, 0, m.v);
            return;
        }
        const FrameInfo& f = hv.frame(m);
        const uint64_t x = f.type_info.load(std::memory_order_acquire);
        const bool ok = f.owner.load(std::memory_order_acquire) == self && (x & ti::kValidated) &&
                        (l4_only ? ti::type(x) == PageType::L4 : is_table_type(ti::type(x)));
        if (!ok) fail(m, kNoIndex, what, self, x);
        ++tally[m.v].general;
        ++tally[m.v].type;
    }
};

} // namespace

bool check_invariants(Hypervisor& hv, TallySpan scratch, InvariantReport& r)
{
    r.clear();
    const uint64_t n = hv.mem().nr_frames;
    if (scratch.size < n) {
        r.add(Mfn{0}, kNoIndex, "invariant scratch smaller than the machine", n, scratch.size);
        return false;
    }
    Checker c{hv, scratch.data, r};
    uint64_t owned[kMaxDomains] = {};

    // Tallies are bumped on the targets of entries, so all are zeroed first.
    for (uint64_t i = 0; i < n; ++i) scratch.data[i] = FrameTally{0, 0};
    r.frames = n;
    // Each frame's own state; the references its entries (if a validated table)
    // and its pin hold.
    for (uint64_t i = 0; i < n; ++i) {
        const Mfn m{i};
        const uint64_t x = c.frame_state(m, owned);
        if (is_table_type(ti::type(x)) && (x & ti::kValidated)) c.table(m, Level(uint8_t(ti::type(x))));
        if (x & ti::kPinned) c.root(m, hv.frame(m).owner.load(std::memory_order_acquire), false, "bad pin");
    }
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const Domain* d = hv.domain(id);
        if (d && owned[id] != d->nr_frames)
            r.add(Mfn{0}, kNoIndex, "domain owns a different number of frames than it was given",
                  d->nr_frames, owned[id]);
    }

    // The vCPUs' base pointers.
    for (DomId id = 0; id < kMaxDomains; ++id) {
        Domain* d = hv.domain(id);
        if (!d) continue;
        for (unsigned k = 0; k < d->nr_vcpus; ++k) {
            const Vcpu& v = d->vcpus[k];
            if (v.has_table) c.root(v.guest_table, id, true, "base pointer is no validated L4 of its domain");
            if (v.has_user_table)
                c.root(v.guest_table_user, id, true, "user base pointer is no validated L4 of its domain");
        }
        for (unsigned k = 0; k < d->nr_held && k < Domain::kMaxHeld; ++k) c.held(d->held[k], id);
        // The FIFO event ABI's control blocks and event array pages (core/event_fifo.h).
        if (const DomainEvents* e = d->events; e && evtchn_fifo_on(*e)) {
            for (unsigned k = 0; k < d->nr_vcpus; ++k)
                if (e->fifo.vcpu[k].block) c.held(e->fifo.vcpu[k].block_mfn, id);
            const unsigned pages = e->fifo.nr_pages.load(std::memory_order_acquire);
            for (unsigned k = 0; k < pages && k < kFifoMaxPages; ++k) c.held(e->fifo.page_mfn[k], id);
        }
    }

    // The grant tables' frames, mappings and pins (grant_invariants.h).
    check_grants(hv, scratch.data, r);

    // What each frame's counts say against what was found.
    for (uint64_t i = 0; i < n; ++i) {
        const FrameInfo& f = hv.frame(Mfn{i});
        const FrameTally& t = scratch.data[i];
        const uint32_t general = f.count.load(std::memory_order_acquire);
        const uint64_t type = f.type_count();
        if (general != t.general)
            r.add(Mfn{i}, kNoIndex, "general count differs from the references held", t.general, general);
        if (type != t.type)
            r.add(Mfn{i}, kNoIndex, "type count differs from the references held", t.type, type);
    }
    return r.ok();
}

} // namespace pvmmu
