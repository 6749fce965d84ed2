// Guest page tables (docs/design.md §4): which entries a guest may install at each level,
// the references an entry holds, validation of whole tables, and the install of
// one entry by a compare-exchange loop that tolerates only hardware A/D changes.
#pragma once

#include "core/refs.h"

namespace pvmmu {

// Flag bits a guest may not set in a present entry (docs/design.md §4: cache attributes,
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
// foreign domain this request names; else -EPERM. The
// entry's general reference keeps the owner from changing meanwhile (it
// changes only at count 0), so a relaxed load reads the owner it had when the
// entry was made, and nothing else is read on its strength.
[[gnu::noinline, gnu::cold]] int check_raise_foreign(Hypervisor& hv, DomId owner, const MapContext& ctx);

// A writable raise's writable type reference, after the owner rule above: the
// one way every path (mod_entry_refs, l1_run, flag_range) takes it.
[[nodiscard]] inline int get_raised_type(Hypervisor& hv, Mfn m, const MapContext& ctx)
{
    const DomId owner = hv.frame(m).owner.load(std::memory_order_relaxed);
    if (owner != ctx.self) [[unlikely]] {
        if (int rc = check_raise_foreign(hv, owner, ctx)) return rc;
    }
    return get_writable_type(hv, m);
}

void put_entry_refs(Hypervisor& hv, Level level, Pte e);

// Whole-table validation on the first type reference and its undo on the last.
[[nodiscard]] int validate_table(Hypervisor& hv, Mfn m, Level level);
void devalidate_table(Hypervisor& hv, Mfn m, Level level);

// What an install does with the A/D bits of the entry it replaces, `cur` being
// its value at the instant of the install (docs/abi.md §4.3):
//   Overwrite  nv as given: cmd 0 (Xen's normal update: A/D set meanwhile are
//              lost), and cmd 2 when the old entry maps nothing (its bits 5 and 6
//              are the guest's, not hardware's) or the new one maps another
//              frame (the old page's A/D say nothing about the new page);
//   Fold       nv | (cur & (A|D)): cmd 2 keeping the frame mapped, so every A/D
//              bit present at the install stays with its page;
//   HandBack   (nv & ~(A|D)) | (cur & (A|D)): cmd 2 leaving the entry
//              non-present, where the old mapping's A/D are handed back exactly
//              for the guest to read (hardware never touches the entry again).
enum class AdRule : uint8_t { Overwrite, Fold, HandBack };

template <AdRule R>
constexpr uint64_t with_ad(uint64_t nv, uint64_t cur)
{
    if constexpr (R == AdRule::Fold) return nv | (cur & pte_bit::AD);
    else if constexpr (R == AdRule::HandBack) return (nv & ~pte_bit::AD) | (cur & pte_bit::AD);
    else return nv;
}

// cmd 2's rule for replacing `old` with `nv`. Only hardware may change the entry
// between the hypervisor's read and the install, and only its A/D bits (anything
// else is -EBUSY), so a rule chosen from `old` holds at the install.
constexpr AdRule atomic_rule(Pte old, Pte nv)
{
    if (!old.present()) return AdRule::Overwrite;
    if (!nv.present()) return AdRule::HandBack;
    return nv.mfn() == old.mfn() ? AdRule::Fold : AdRule::Overwrite;
}

// The install loop. `old` is the value the caller checked against and receives
// the value actually replaced; the value installed is with_ad<R>(nv, current).
// Any change other than A/D is a concurrent writer that should not exist:
// -EBUSY, nothing installed.
//
// The first round is inline; a round lost to hardware goes out of line, where
// it is counted (Hypervisor::install_retries), so the per-PTE path is one
// compare-exchange and a branch, as before the count.
template <AdRule R>
[[gnu::noinline, gnu::cold]] int install_entry_contended(Hypervisor& hv, uint64_t* slot, uint64_t& old,
                                                         uint64_t nv, uint64_t cur)
{
    std::atomic_ref<uint64_t> e(*slot);
    do {
        if ((cur ^ old) & ~pte_bit::AD) return -XEN_EBUSY;
        hv.note_install_retry();
    } while (!e.compare_exchange_weak(cur, with_ad<R>(nv, cur), std::memory_order_acq_rel));
    old = cur;
    return 0;
}

template <AdRule R>
[[nodiscard]] inline int install_entry(Hypervisor& hv, uint64_t* slot, uint64_t& old, uint64_t nv)
{
    uint64_t cur = old;
    if (std::atomic_ref<uint64_t>(*slot).compare_exchange_strong(cur, with_ad<R>(nv, cur),
                                                                 std::memory_order_acq_rel)) [[likely]]
        return 0;
    return install_entry_contended<R>(hv, slot, old, nv, cur);
}

// cmd 2 (FoldAd) or cmd 0 on an entry whose frame stays mapped (both present,
// same frame): the per-PTE paths.
template <bool FoldAd>
inline constexpr AdRule kSameFrame = FoldAd ? AdRule::Fold : AdRule::Overwrite;

inline uint64_t load_entry(uint64_t* slot)
{
    return std::atomic_ref<uint64_t>(*slot).load(std::memory_order_acquire);
}

inline bool entry_flags_ok(Level level, Pte e) { return (e.v & disallow::at(level)) == 0; }

// The part of mod_entry that changes references (out of line: not the hot path).
template <bool FoldAd>
[[nodiscard]] int mod_entry_refs(Hypervisor& hv, Level level, uint64_t* slot, uint64_t old,
                                 Pte nv, const MapContext& ctx);

// An L1 entry's writable raise, its frame still mapped (present before and
// after, same frame, RW set): change_entry's same-frame case without its
// tests of which case it is (out of line, as mod_entry_refs: the inline
// caller's frame stays that of the flag-only change).
template <bool FoldAd>
[[nodiscard]] int mod_entry_raise(Hypervisor& hv, uint64_t* slot, uint64_t old, Pte nv, const MapContext& ctx);

// Checked update of one entry of a validated table the caller holds (a type
// reference and the page lock): validation of `nv`, reference changes, install.
// A change of flags only (same frame, same P and RW) touches no frame: that is
// the mprotect hot path of docs/design.md §4 "Cost", kept inline.
template <bool FoldAd>
[[nodiscard]] inline int mod_entry(Hypervisor& hv, Level level, uint64_t* slot, Pte nv,
                                   const MapContext& ctx)
{
    uint64_t old = load_entry(slot);
    nv = adjust_guest_entry(nv);
    if (nv.present() && !entry_flags_ok(level, nv)) return -XEN_EINVAL;
    constexpr uint64_t kRefBits = pte_bit::ADDR | pte_bit::P | pte_bit::RW;
    if (nv.present() && ((old ^ nv.v) & kRefBits) == 0)
        return install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv.v);
    // An L1 entry's writable raise, its frame still mapped: Linux's
    // copy-on-write fault on a page it may reuse (the PTE made RW by a
    // one-request mmu_update), to mod_entry_raise.
    if (level == Level::L1 && nv.present() && ((old ^ nv.v) & kRefBits) == pte_bit::RW && nv.writable())
        return mod_entry_raise<FoldAd>(hv, slot, old, nv, ctx);
    return mod_entry_refs<FoldAd>(hv, level, slot, old, nv, ctx);
}

// The frame that va's walk in v's address space (its kernel root) reaches
// through the entry of level Last, into `out`: the L1 that maps va for Last
// 2, the frame va maps for Last 1; false when the walk ends early. `self` is
// v's domain, which the caller has at hand. Lock-free, every value checked
// before use (update_va_mapping.cc says why that is enough): every table
// read is the domain's own, every entry present and naming a
// frame of the machine, and the levels above the L1 stop at a PS entry (in
// an L1 entry the bit is PAT). The caller takes what reference it needs on
// the result. Inline and unrolled: each level's index shift and PS test are
// constants, the frame table and memory held in registers across the
// atomic loads (the #PF path's emulated write, core/src/pt_write.cc).
template <unsigned Last>
[[gnu::always_inline]] inline bool walk_tables(Hypervisor& hv, const Vcpu& v, DomId self, Vaddr va, Mfn& out)
{
    static_assert(Last >= 1 && Last <= 4);
    if (!v.has_table || hv.l4_slot_reserved(table_index(va, Level::L4))) return false;
    const MachineMemory mem = hv.mem();   // fixed while the machine runs
    FrameInfo* const frames = &hv.frame(Mfn{0});
    Mfn m = v.guest_table;
#pragma GCC unroll 4
    for (unsigned l = 4; l >= Last; --l) {
        if (frames[m.v].owner.load(std::memory_order_acquire) != self) return false;
        const Pte e{load_entry(mem.table(m) + table_index(va, Level(uint8_t(l))))};
        if (!e.present() || (l > 1 && (e.v & pte_bit::PS)) || !mem.valid(e.mfn())) return false;
        m = e.mfn();
    }
    out = m;
    return true;
}

// walk_tables<2>, out of line: the L1 that maps va, or Mfn{~0} when the
// walk ends early.
Mfn walk_to_l1(Hypervisor& hv, const Vcpu& v, Vaddr va);

} // namespace pvmmu
