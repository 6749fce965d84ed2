// GNTTABOP_map_grant_ref, unmap_grant_ref and unmap_and_replace
// (core/grant_table.h; docs/architecture.md "Grant tables"): a grant mapping
// is an L1 entry whose references are exactly an L1 entry's, installed by the
// grant code after the granter's entry is pinned, and removed by it before the
// pin goes — with every TLB of the mapper's CPUs flushed in between, so no
// translation outlives the GTF_reading / GTF_writing the granter relies on.
// Every refusal is Xen's GNTST_* and changes nothing.
#include "core/grant_table.h"

#include "core/pagetable.h"
#include "core/table_cursor.h"

namespace pvmmu {

namespace {

// Where a mapping's entry is: an L1 of the mapper and the index in it.
struct PteSlot {
    Mfn l1{~0ull};
    unsigned index = 0;
};

// host_addr as the request's flags say: the machine address of the entry
// (GNTMAP_contains_pte: 8-byte aligned), or a virtual address of v's kernel
// address space whose L1 is found by the same lock-free walk as
// update_va_mapping's (the cursor then checks it is a validated L1 of v's).
bool find_slot(Hypervisor& hv, Vcpu& v, uint64_t host_addr, uint32_t flags, PteSlot& out)
{
    if (flags & GNTMAP_contains_pte) {
        if (host_addr & (sizeof(uint64_t) - 1)) return false;
        const Maddr a{host_addr};
        out = PteSlot{a.mfn(), a.offset() / unsigned(sizeof(uint64_t))};
        return hv.mem().valid(out.l1);
    }
    const Vaddr va{host_addr};
    if (!canonical(va)) return false;
    out = PteSlot{walk_to_l1(hv, v, va), table_index(va, Level::L1)};
    return hv.mem().valid(out.l1);
}

// The entry of a grant mapping: present, accessed and dirty (nothing for
// hardware to set), never executable, writable unless read-only, and the
// request's GNTMAP_guest_avail bits in the PTE's available bits 9-11
// (XENFEAT_gnttab_map_avail_bits); user-accessible, as every entry of a
// 64-bit PV guest (core/pagetable.h adjust_guest_entry), so
// GNTMAP_application_map changes nothing.
Pte grant_pte(Mfn m, uint32_t flags)
{
    uint64_t f = pte_bit::P | pte_bit::A | pte_bit::D | pte_bit::US | pte_bit::NX;
    if (!(flags & GNTMAP_readonly)) f |= pte_bit::RW;
    f |= (uint64_t(flags >> _GNTMAP_guest_avail0) << 9) & pte_bit::AVL_LO;
    return Pte::make(m, f);
}

GrantTable* granter_table(Hypervisor& hv, DomId dom)
{
    Domain* rd = hv.domain(dom);
    return rd ? rd->grants : nullptr;
}

// The caller holds no lock: the last pin of a torn-down granter gives the
// frames kept for it back (grant_relinquish_owner).
void unpin_locked(Hypervisor& hv, GrantTable& rgt, grant_ref_t ref, bool readonly)
{
    bool last;
    {
        LockGuard g(rgt.lock, hv.platform());
        last = grant_unpin(hv, rgt, ref, readonly);
    }
    if (last) grant_relinquish_owner(hv, rgt);
}

void release_handle(Hypervisor& hv, GrantTable& lgt, uint32_t h)
{
    LockGuard g(lgt.maptrack_lock, hv.platform());
    lgt.free_handle(h);
}

// The references an L1 entry mapping m holds (get_entry_refs), taken for the
// granter's frame; GNTST_general_error when it cannot be typed writable (a
// page table, a descriptor frame) or is no longer the granter's.
int16_t get_grant_refs(Hypervisor& hv, Mfn m, DomId granter, bool readonly)
{
    if (get_page(hv, m, granter)) return GNTST_general_error;
    if (!readonly && get_writable_type(hv, m)) {
        put_page(hv, m);
        return GNTST_general_error;
    }
    return GNTST_okay;
}

} // namespace

void grant_map_one(Hypervisor& hv, Vcpu& v, gnttab_map_grant_ref_t& op)
{
    Domain& d = *v.domain;
    GrantTable& lgt = *d.grants;
    const uint32_t flags = op.flags;
    const bool readonly = flags & GNTMAP_readonly;
    if (!(flags & (GNTMAP_device_map | GNTMAP_host_map))) {
        op.status = GNTST_bad_gntref;
        return;
    }
    GrantTable* rgt = granter_table(hv, op.dom);
    if (!rgt) {
        op.status = GNTST_bad_domain;
        return;
    }
    if (!d.policy.allows(Perm::GrantMap)) {
        op.status = GNTST_permission_denied;
        return;
    }
    // No device (IOMMU) mappings: a bus address is no more than the machine
    // address, and pvmmu's domains drive no devices (docs/abi.md).
    if (flags & GNTMAP_device_map) {
        op.status = GNTST_general_error;
        return;
    }
    int64_t h;
    {
        LockGuard g(lgt.maptrack_lock, hv.platform());
        h = lgt.reserve_handle();
    }
    // A full maptrack is GNTST_no_space (<xen/grant_table.h>: "out of space
    // (handles etc)"), Xen's answer since its 4.16; GNTST_no_device_space
    // names the IOMMU.
    if (h < 0) {
        op.status = GNTST_no_space;
        return;
    }
    Mfn m{0};
    int16_t st;
    {
        LockGuard g(rgt->lock, hv.platform());
        st = grant_pin(hv, *rgt, d.id, op.ref, readonly, m);
    }
    if (st == GNTST_okay) {
        st = get_grant_refs(hv, m, rgt->owner(), readonly);
        if (st != GNTST_okay) unpin_locked(hv, *rgt, op.ref, readonly);
    }
    if (st != GNTST_okay) {
        release_handle(hv, lgt, uint32_t(h));
        op.status = st;
        return;
    }
    PteSlot slot;
    uint64_t old = 0;
    bool installed = false;
    if (find_slot(hv, v, op.host_addr, flags, slot)) {
        TableCursor cursor(hv, d.id);
        if (cursor.acquire(slot.l1) == 1) {
            uint64_t* pte = cursor.table() + slot.index;
            old = load_entry(pte);
            installed = install_entry<AdRule::Overwrite>(hv, pte, old, grant_pte(m, flags).v) == 0;
        }
    }
    if (!installed) {
        // Nothing installed: the references and the pin go back.
        put_entry_refs(hv, Level::L1, grant_pte(m, flags));
        unpin_locked(hv, *rgt, op.ref, readonly);
        release_handle(hv, lgt, uint32_t(h));
        op.status = GNTST_general_error;
        return;
    }
    // The entry replaced gives up what it held, as any overwritten entry.
    if (Pte{old}.present()) put_entry_refs(hv, Level::L1, Pte{old});
    {
        LockGuard g(lgt.maptrack_lock, hv.platform());
        MapTrack& e = lgt.map(uint32_t(h));
        e.flags = flags;
        e.granter = rgt->owner();
        e.ref = op.ref;
        e.frame = m;
        e.l1 = slot.l1;
        e.index = uint16_t(slot.index);
        e.state = MapTrack::State::Live;
    }
    op.handle = grant_handle_t(h);
    op.dev_bus_addr = maddr_of(m).v;
    op.status = GNTST_okay;
}

void grant_unmap_one(Hypervisor& hv, Vcpu& v, uint64_t host_addr, uint64_t new_addr, grant_handle_t handle,
                     int16_t& status, bool replace)
{
    Domain& d = *v.domain;
    GrantTable& lgt = *d.grants;
    MapTrack e;
    {
        LockGuard g(lgt.maptrack_lock, hv.platform());
        if (handle >= lgt.handle_limit() || lgt.map(handle).state != MapTrack::State::Live) {
            status = GNTST_bad_handle;
            return;
        }
        // Xen: no host address, nothing to undo (the handle stays).
        if (!host_addr) {
            status = GNTST_okay;
            return;
        }
        e = lgt.map(handle);
        lgt.map(handle).state = MapTrack::State::Unmapping;   // a second unmap is a bad handle
    }
    auto refuse = [&](int16_t st) {
        LockGuard g(lgt.maptrack_lock, hv.platform());
        lgt.map(handle).state = MapTrack::State::Live;
        status = st;
    };
    PteSlot slot;
    if (!find_slot(hv, v, host_addr, e.flags, slot) || !(slot.l1 == e.l1) || slot.index != e.index)
        return refuse(GNTST_general_error);
    if (replace && (e.flags & GNTMAP_contains_pte)) return refuse(GNTST_general_error);
    // unmap_and_replace's new_addr: the entry that maps it moves to the
    // grant mapping's slot and is zapped where it was, its references going
    // with it (both are L1 entries of the same domain). Only an entry of the
    // domain's own frame, or none, moves: a grant mapping stays where its
    // maptrack entry says it is.
    PteSlot ns;
    if (replace && !find_slot(hv, v, new_addr, 0, ns)) return refuse(GNTST_general_error);
    uint64_t old = 0;
    {
        TableCursor a(hv, d.id), b(hv, d.id);
        const bool two = replace && !(ns.l1 == e.l1);
        // Two tables are locked in frame order, so two such calls never
        // wait on each other.
        if (two && ns.l1.v < e.l1.v && b.acquire(ns.l1) != 1) return refuse(GNTST_general_error);
        if (a.acquire(e.l1) != 1) return refuse(GNTST_general_error);
        if (two && !b.level() && b.acquire(ns.l1) != 1) return refuse(GNTST_general_error);
        uint64_t* pte = a.table() + e.index;
        old = load_entry(pte);
        const Pte o{old};
        // The entry must still be this mapping (the guest may have
        // overwritten it by mmu_update: Xen then refuses too).
        if (!o.present() || !(o.mfn() == e.frame) || o.writable() == e.readonly())
            return refuse(GNTST_general_error);
        uint64_t* from = nullptr;
        uint64_t moved = 0;
        if (replace) {
            from = (two ? b.table() : a.table()) + ns.index;
            moved = load_entry(from);
            const Pte m{moved};
            if (from == pte || (m.present() && hv.frame(m.mfn()).owner.load(std::memory_order_acquire) != d.id))
                return refuse(GNTST_general_error);
        }
        if (install_entry<AdRule::Overwrite>(hv, pte, old, moved)) return refuse(GNTST_general_error);
        if (from && install_entry<AdRule::Overwrite>(hv, from, moved, 0)) {
            // Only hardware writes a locked table's entries, and only A/D:
            // cannot happen; the slot gets the grant mapping back.
            uint64_t cur = load_entry(pte);
            (void)install_entry<AdRule::Overwrite>(hv, pte, cur, old);
            return refuse(GNTST_general_error);
        }
    }
    // No CPU of the mapper may keep the translation once the granter is told
    // the frame is free again. A whole flush, as Xen's gnttab_flush_tlb: the
    // L1 may be linked at more addresses than the one the mapping was made at.
    hv.platform().flush_tlbs(d.all_cpus(), FlushRequest{});
    put_entry_refs(hv, Level::L1, Pte{old});
    if (GrantTable* rgt = granter_table(hv, e.granter)) unpin_locked(hv, *rgt, e.ref, e.readonly());
    release_handle(hv, lgt, handle);
    status = GNTST_okay;
}

void grant_teardown(Hypervisor& hv, Domain& d)
{
    GrantTable* gt = d.grants;
    if (!gt) return;
    for (uint32_t h = 0; h < gt->handle_limit(); ++h) {
        if (gt->map(h).state == MapTrack::State::Live) {
            hv.platform().flush_tlbs(d.all_cpus(), FlushRequest{});
            break;
        }
    }
    LockGuard g(gt->lock, hv.platform());
    gt->mark_dying();
    gt->release_frames(hv);
}

uint32_t grant_release_pins(Hypervisor& hv, Domain& d)
{
    GrantTable* gt = d.grants;
    uint32_t last_pins = 0;
    if (!gt) return last_pins;
    for (uint32_t h = 0; h < gt->handle_limit(); ++h) {
        const MapTrack e = gt->map(h);
        if (e.state == MapTrack::State::Free) continue;
        if (e.state == MapTrack::State::Live) {
            if (GrantTable* rgt = granter_table(hv, e.granter)) {
                LockGuard g(rgt->lock, hv.platform());
                if (grant_unpin(hv, *rgt, e.ref, e.readonly())) last_pins |= 1u << rgt->owner();
            }
        }
        release_handle(hv, *gt, h);
    }
    return last_pins;
}

} // namespace pvmmu
