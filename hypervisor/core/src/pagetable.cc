// Page-table entry rules, references, validation and the checked entry update.
#include "core/pagetable.h"

#include "core/entry_change.h"
#include "get_page.h"

namespace pvmmu {

int get_entry_refs(Hypervisor& hv, Level level, Pte e, const MapContext& ctx)
{
    const Mfn m = e.mfn();
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    if (level != Level::L1) {
        // L2-L4 entries name validated tables of the next level of the same domain.
        return get_page_and_type(hv, m, ctx.self, table_type(Level(uint8_t(level) - 1)));
    }
    const DomId owner = hv.frame(m).owner.load(std::memory_order_acquire);
    const DomId allowed = owner == ctx.self ? ctx.self : ctx.foreign;
    if (int rc = get_page_inline(hv, m, allowed)) return rc;
    if (e.writable()) {
        if (int rc = get_writable_type(hv, m)) {
            put_page(hv, m);
            return rc;
        }
    }
    return 0;
}

int check_raise_foreign(Hypervisor& hv, DomId owner, const MapContext& ctx)
{
    if (owner != ctx.foreign) return -XEN_EPERM;
    const Domain* d = hv.domain(ctx.self);
    return d && d->policy.allows(Perm::MapForeign) ? 0 : -XEN_EPERM;
}

void put_entry_refs(Hypervisor& hv, Level level, Pte e)
{
    if (level != Level::L1 || e.writable()) put_page_type(hv, e.mfn());
    put_page(hv, e.mfn());
}

namespace {

// Past the absent entries that follow entry i of t, itself absent, eight at
// a time: the last index passed, for a loop's ++i to go on from. The tables
// of a process's stack, libraries and heap hold a few entries of 512, and a
// pin or unpin looks at every one; a run of eight absent entries then costs
// a load and an OR each, not a test and a branch. Out of line, so that the
// loops' present entries pay nothing for it.
[[gnu::noinline]] unsigned skip_absent(uint64_t* t, unsigned i)
{
    constexpr unsigned kRun = 8;
    while (i + kRun < kEntriesPerTable) {
        uint64_t* const run = t + i + 1;
        uint64_t any = 0;
#pragma GCC unroll 8
        for (unsigned k = 0; k < kRun; ++k) any |= load_entry(run + k);
        if (any & pte_bit::P) break;
        i += kRun;
    }
    return i;
}

// get_entry_refs of an L1 entry when the foreign domain is the table's owner
// itself, as in validate_table: the owner rule then names that owner
// whichever frame the entry maps, so get_page's own check (valid frame,
// -EINVAL; that owner, -EPERM) is the whole rule, and the lookup before it
// is not made twice per entry.
inline int get_own_l1_refs(Hypervisor& hv, Pte e, DomId self)
{
    const Mfn m = e.mfn();
    if (int rc = get_page_inline(hv, m, self)) return rc;
    if (e.writable()) {
        if (int rc = get_writable_type(hv, m)) {
            put_page(hv, m);
            return rc;
        }
    }
    return 0;
}

// validate_table's first pass for one level, so that an L1's (a pin of a
// process's table: 512 entries) tests no level per entry: the references of
// entries 0 .. i - 1 taken, 0; or the errno of entry i, whose references and
// those after it are not taken. `adjust` set when an entry needs US.
template <Level L>
int get_table_entries(Hypervisor& hv, uint64_t* t, const MapContext& ctx, unsigned& i, bool& adjust)
{
    for (; i < kEntriesPerTable; ++i) {
        const Pte e{load_entry(&t[i])};
        int rc = 0;
        if (L == Level::L4 && hv.l4_slot_reserved(i)) {
            if (e.v != 0) rc = -XEN_EINVAL;
        } else if (e.present()) {
            adjust |= !(e.v & pte_bit::US);
            if (!entry_flags_ok(L, e)) rc = -XEN_EINVAL;
            else rc = L == Level::L1 ? get_own_l1_refs(hv, e, ctx.self) : get_entry_refs(hv, L, e, ctx);
        } else if (L != Level::L4) {
            i = skip_absent(t, i);
        }
        if (rc) return rc;
    }
    return 0;
}

} // namespace

int validate_table(Hypervisor& hv, Mfn m, Level level)
{
    uint64_t* t = hv.mem().table(m);
    const DomId self = hv.frame(m).owner.load(std::memory_order_acquire);
    const MapContext ctx{self, self};
    hv.note_table_work(self, kEntriesPerTable);   // every entry is looked at, and again to adjust or undo
    unsigned i = 0;
    // Whether some present entry lacks US (adjust_guest_entry's change): a
    // table whose entries all have it, as a fork's copies of its parent's
    // do, needs no second pass (an L4 always does, for its reserved slots).
    bool adjust = level == Level::L4;
    int rc;
    switch (level) {
    case Level::L1: rc = get_table_entries<Level::L1>(hv, t, ctx, i, adjust); break;
    case Level::L2: rc = get_table_entries<Level::L2>(hv, t, ctx, i, adjust); break;
    case Level::L3: rc = get_table_entries<Level::L3>(hv, t, ctx, i, adjust); break;
    default: rc = get_table_entries<Level::L4>(hv, t, ctx, i, adjust); break;
    }
    if (rc) {
        while (i-- > 0) {
            const Pte e{load_entry(&t[i])};
            if (e.present() && !(level == Level::L4 && hv.l4_slot_reserved(i)))
                put_entry_refs(hv, level, e);
        }
        return rc;
    }
    // Entries are adjusted only once the whole table is accepted: a failed request
    // changes nothing (docs/design.md §3). Nobody can write the table while it is being
    // validated (no writable mapping and no type reference exist), so a plain
    // update is safe. Reserved L4 slots are zero here and get the platform's
    // entries (core/platform.h reserved_l4_entry).
    for (i = 0; adjust && i < kEntriesPerTable; ++i) {
        const Pte e{load_entry(&t[i])};
        const bool reserved = level == Level::L4 && hv.l4_slot_reserved(i);
        const Pte a = reserved ? Pte{hv.platform().reserved_l4_entry(self, i)} : adjust_guest_entry(e);
        if (a.v != e.v) std::atomic_ref<uint64_t>(t[i]).store(a.v);
    }
    // Walkers must see what was validated, not an older copy of the frame.
    hv.platform().tables_written(m);
    return 0;
}

namespace {

// devalidate_table's loop for one level, so that an L1's (an unpin of a
// process's table: 512 entries) tests no level per entry.
template <Level L>
void put_table_entries(Hypervisor& hv, uint64_t* t)
{
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const Pte e{load_entry(&t[i])};
        if (L == Level::L4 && hv.l4_slot_reserved(i)) {
            // The frame may become writable to its guest next: no hypervisor
            // entry stays behind, and a later validation finds the slot empty.
            if (e.v) std::atomic_ref<uint64_t>(t[i]).store(0);
        } else if (e.present()) {
            put_entry_refs(hv, L, e);
        } else if (L != Level::L4) {
            i = skip_absent(t, i);
        }
    }
}

} // namespace

void devalidate_table(Hypervisor& hv, Mfn m, Level level)
{
    uint64_t* t = hv.mem().table(m);
    // Only the owner takes type references on its tables: the last one going
    // finds the frame still its own.
    hv.note_table_work(hv.frame(m).owner.load(std::memory_order_acquire), kEntriesPerTable);
    switch (level) {
    case Level::L1: return put_table_entries<Level::L1>(hv, t);
    case Level::L2: return put_table_entries<Level::L2>(hv, t);
    case Level::L3: return put_table_entries<Level::L3>(hv, t);
    case Level::L4: return put_table_entries<Level::L4>(hv, t);
    }
}

namespace {

// An install that changes the frame or P: cmd 0 overwrites, cmd 2 goes by
// atomic_rule (core/pagetable.h).
template <bool FoldAd>
int install_new(Hypervisor& hv, uint64_t* slot, uint64_t& old, Pte nv)
{
    if constexpr (FoldAd) {
        switch (atomic_rule(Pte{old}, nv)) {
        case AdRule::Fold: return install_entry<AdRule::Fold>(hv, slot, old, nv.v);
        case AdRule::HandBack: return install_entry<AdRule::HandBack>(hv, slot, old, nv.v);
        case AdRule::Overwrite: break;
        }
    }
    return install_entry<AdRule::Overwrite>(hv, slot, old, nv.v);
}

} // namespace

template <bool FoldAd>
int mod_entry_refs(Hypervisor& hv, Level level, uint64_t* slot, uint64_t old, Pte nv,
                   const MapContext& ctx)
{
    const Pte o{old};
    return change_entry(hv, level, o, nv, ctx, [&](bool same_frame) {
        if (same_frame) return install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv.v);
        return install_new<FoldAd>(hv, slot, old, nv);
    });
}

template <bool FoldAd>
int mod_entry_raise(Hypervisor& hv, uint64_t* slot, uint64_t old, Pte nv, const MapContext& ctx)
{
    if (int rc = get_raised_type(hv, nv.mfn(), ctx)) return rc;
    const int rc = install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv.v);
    if (rc) put_page_type(hv, nv.mfn());
    return rc;
}

template int mod_entry_raise<true>(Hypervisor&, uint64_t*, uint64_t, Pte, const MapContext&);
template int mod_entry_raise<false>(Hypervisor&, uint64_t*, uint64_t, Pte, const MapContext&);
template int mod_entry_refs<true>(Hypervisor&, Level, uint64_t*, uint64_t, Pte, const MapContext&);
template int mod_entry_refs<false>(Hypervisor&, Level, uint64_t*, uint64_t, Pte, const MapContext&);

} // namespace pvmmu
