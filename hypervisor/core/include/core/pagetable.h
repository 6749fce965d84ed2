// Guest page tables (SPEC §4): which entries a guest may install at each level,
// the references an entry holds, validation of whole tables, and the install of
// one entry by a compare-exchange loop that tolerates only hardware A/D changes.
#pragma once

#include "core/refs.h"

namespace pvmmu {

// Flag bits a guest may not set in a present entry (SPEC §4: cache attributes,
// global, protection keys; PS at L2/L3 since pvmmu maps no superpages).
namespace disallow {
inline constexpr uint64_t kL1 = pte_bit::PWT | pte_bit::PCD | pte_bit::PAT | pte_bit::G | pte_bit::PK;
inline constexpr uint64_t kUpper = pte_bit::PWT | pte_bit::PCD | pte_bit::PS | pte_bit::G | pte_bit::PK;
constexpr uint64_t at(Level l) { return l == Level::L1 ? kL1 : kUpper; }
} // namespace disallow

// x86-64 PV guests run in ring 3, so every present entry is made user-accessible
// on install (as Xen's adjust_guest_l*e does).
constexpr Pte adjust_guest_entry(Pte e) { return e.present() ? Pte{e.v | pte_bit::US} : e; }

// Who a mapping in an L1 entry may name: the table's owner, or with the MapForeign
// privilege the foreign domain given to mmu_update.
struct MapContext {
    DomId self;
    DomId foreign;   // == self when no foreign domain was named
};

// References an entry at `level` holds while installed (it is present).
[[nodiscard]] int get_entry_refs(Hypervisor& hv, Level level, Pte e, const MapContext& ctx);

// The owner rule of get_entry_refs again, for a writable raise of a frame an L1
// entry already maps (same frame, RW 0 -> 1): the entry was checked when it was
// made, maybe under another foreigndom or a MapForeign privilege withdrawn
// since, and a raise takes no general reference that would check it again. The
// caller's own frame, or (while it still holds MapForeign) a frame of the
// foreign domain this request names; else -EPERM (issue 12, finding 7). The
// entry's general reference keeps the owner from changing meanwhile.
[[nodiscard]] inline int check_raise_owner(Hypervisor& hv, Mfn m, const MapContext& ctx)
{
    const DomId owner = hv.frame(m).owner.load(std::memory_order_acquire);
    if (owner == ctx.self) [[likely]]
        return 0;
    if (owner != ctx.foreign) return -XEN_EPERM;
    const Domain* d = hv.domain(ctx.self);
    return d && d->policy.allows(Perm::MapForeign) ? 0 : -XEN_EPERM;
}
void put_entry_refs(Hypervisor& hv, Level level, Pte e);

// Whole-table validation on the first type reference and its undo on the last.
[[nodiscard]] int validate_table(Hypervisor& hv, Mfn m, Level level);
void devalidate_table(Hypervisor& hv, Mfn m, Level level);

// The install loop. `old` is the value the caller checked against and receives
// the value actually replaced. With FoldAd (cmd 2) every A/D bit present at the
// install survives: installed = nv | (current & (A|D)). Without (cmd 0, Xen's
// normal update) A/D set meanwhile are overwritten. Any change other than A/D is
// a concurrent writer that should not exist: -EBUSY, nothing installed.
//
// The first round is inline; a round lost to hardware goes out of line, where
// it is counted (Hypervisor::install_retries), so the per-PTE path is one
// compare-exchange and a branch, as before the count.
template <bool FoldAd>
[[gnu::noinline, gnu::cold]] int install_entry_contended(Hypervisor& hv, uint64_t* slot, uint64_t& old,
                                                         uint64_t nv, uint64_t cur)
{
    std::atomic_ref<uint64_t> e(*slot);
    do {
        if ((cur ^ old) & ~pte_bit::AD) return -XEN_EBUSY;
        hv.note_install_retry();
    } while (!e.compare_exchange_weak(cur, FoldAd ? nv | (cur & pte_bit::AD) : nv, std::memory_order_acq_rel));
    old = cur;
    return 0;
}

template <bool FoldAd>
[[nodiscard]] inline int install_entry(Hypervisor& hv, uint64_t* slot, uint64_t& old, uint64_t nv)
{
    uint64_t cur = old;
    if (std::atomic_ref<uint64_t>(*slot).compare_exchange_strong(cur, FoldAd ? nv | (cur & pte_bit::AD) : nv,
                                                                 std::memory_order_acq_rel)) [[likely]]
        return 0;
    return install_entry_contended<FoldAd>(hv, slot, old, nv, cur);
}

inline uint64_t load_entry(uint64_t* slot)
{
    return std::atomic_ref<uint64_t>(*slot).load(std::memory_order_acquire);
}

inline bool entry_flags_ok(Level level, Pte e) { return (e.v & disallow::at(level)) == 0; }

// The part of mod_entry that changes references (out of line: not the hot path).
template <bool FoldAd>
[[nodiscard]] int mod_entry_refs(Hypervisor& hv, Level level, uint64_t* slot, uint64_t old,
                                 Pte nv, const MapContext& ctx);

// Checked update of one entry of a validated table the caller holds (a type
// reference and the page lock): validation of `nv`, reference changes, install.
// A change of flags only (same frame, same P and RW) touches no frame: that is
// the mprotect hot path of SPEC §4 "Cost", kept inline.
template <bool FoldAd>
[[nodiscard]] inline int mod_entry(Hypervisor& hv, Level level, uint64_t* slot, Pte nv,
                                   const MapContext& ctx)
{
    uint64_t old = load_entry(slot);
    nv = adjust_guest_entry(nv);
    if (nv.present() && !entry_flags_ok(level, nv)) return -XEN_EINVAL;
    constexpr uint64_t kRefBits = pte_bit::ADDR | pte_bit::P | pte_bit::RW;
    if (nv.present() && ((old ^ nv.v) & kRefBits) == 0) return install_entry<FoldAd>(hv, slot, old, nv.v);
    return mod_entry_refs<FoldAd>(hv, level, slot, old, nv, ctx);
}

} // namespace pvmmu
