// See core/pt_write.h. The checks are mod_entry's on an L1 (core/pagetable.h)
// and the reference changes the same code as its (core/entry_change.h); only
// the install differs: it must hit exactly the value the write was computed
// from, so that an A/D bit hardware sets meanwhile is neither lost nor, for
// XCHG/CMPXCHG/BTR, missing from the old value the instruction returns.
#include "core/pt_write.h"

#include "core/entry_change.h"
#include "core/refs.h"
#include "race_site.h"

namespace pvmmu {

namespace {

// Lost to hardware: the entry's A/D changed after it was read.
constexpr int kLost = 1;

// Hardware sets A and D, once each, and nothing else writes an entry whose
// table lock is held: two lost rounds at most, a third means an entry changed
// by someone who should not exist.
constexpr unsigned kMaxRounds = 3;

// On a loss, `cur` receives the entry's value the compare-exchange saw.
bool install_exact(uint64_t* slot, uint64_t& cur, uint64_t nv)
{
    return std::atomic_ref<uint64_t>(*slot).compare_exchange_strong(cur, nv, std::memory_order_acq_rel);
}

// `cur` replaced by `nv` in the L1 entry at slot, with mod_entry_refs' rules
// (core/entry_change.h); on kLost, `cur` is the value found instead.
[[gnu::always_inline]] inline int replace_exact(Hypervisor& hv, uint64_t* slot, uint64_t& cur, Pte nv,
                                                const MapContext& ctx)
{
    nv = adjust_guest_entry(nv);
    if (nv.present() && !entry_flags_ok(Level::L1, nv)) return -XEN_EINVAL;
    const Pte o{cur};
    return change_entry(hv, Level::L1, o, nv, ctx, [&](bool) { return install_exact(slot, cur, nv.v) ? 0 : kLost; });
}

// The written L1, held as a TableCursor holds a table (core/table_cursor.h):
// a type reference and the page lock, taken and dropped inline. Taking is
// get_existing_table's (core/refs.h) for a validated L1 only, so a table of
// another level is never referenced; the drop is put_page_type_inline's.
class HeldL1 {
public:
    // known_valid: m is a frame of the machine already (emulate_pt_write's
    // walk tested it), so the test is not made twice.
    HeldL1(Hypervisor& hv, Mfn m, DomId owner, bool known_valid) : hv_(hv), m_(m)
    {
        if (!known_valid && !hv.mem().valid(m)) return;
        FrameInfo& f = hv.frame(m);
        if (f.owner.load(std::memory_order_acquire) != owner) return;
        uint64_t x = f.type_info.load(std::memory_order_acquire);
        do {
            if (ti::type(x) != PageType::L1 || !(x & ti::kValidated) || ti::count(x) == 0 ||
                ti::count(x) >= ti::kCountLimit)
                return;
        } while (!f.type_info.compare_exchange_weak(x, x + 1, std::memory_order_acq_rel));
        f.lock.lock(hv.platform());
        held_ = true;
    }
    HeldL1(const HeldL1&) = delete;
    HeldL1& operator=(const HeldL1&) = delete;
    ~HeldL1()
    {
        if (!held_) return;
        hv_.platform().tables_written(m_);
        FrameInfo& f = hv_.frame(m_);
        f.lock.unlock();
        // put_page_type_inline's body (core/refs.h), here by hand: the call
        // form costs this path one instruction more (§1 ptwr-rw-lower).
        uint64_t x = f.type_info.load(std::memory_order_acquire);
        if (ti::count(x) != 1 && f.type_info.compare_exchange_strong(x, x - 1, std::memory_order_acq_rel)) return;
        put_page_type(hv_, m_);
    }

    bool held() const { return held_; }
    uint64_t* table() const { return hv_.mem().table(m_); }

private:
    Hypervisor& hv_;
    Mfn m_;
    bool held_ = false;
};

// emulate_l1_write's body, for `d` already looked up (null: no such domain,
// whose write the table's owner check refuses). Inline into both callers:
// the #PF path (emulate_pt_write) pays no second call and no lookup.
[[gnu::always_inline]] inline int write_l1(Hypervisor& hv, const Domain* d, DomId self, Mfn l1, bool l1_valid,
                                           unsigned index, const PtWrite& w, uint64_t& old)
{
    // The same write as mmu_update cmd 0, so the same permission: a domain
    // denied it keeps the CPU's #PF (docs/security.md §7.15).
    if (d && !d->policy.allows(Perm::MmuNormal)) return -XEN_EPERM;
    const HeldL1 table(hv, l1, self, l1_valid);
    if (!table.held()) return -XEN_EINVAL;
    uint64_t* const slot = table.table() + index;
    const MapContext ctx{self, self};
    uint64_t cur = load_entry(slot);
    for (unsigned round = 0; round < kMaxRounds; ++round) {
        old = cur;
        const uint64_t nv = apply_pt_write(w, cur);
        // A failed CMPXCHG writes nothing (the CPU's locked form writes the
        // old value back, which is the same entry).
        if (nv == cur) return 0;
        race_point(hv, RacePoint::PtWriteComputed, l1);
        uint64_t seen = cur;
        const int rc = replace_exact(hv, slot, seen, Pte{nv}, ctx);
        if (rc != kLost) return rc;
        // Only hardware's A/D is waited out, as install_entry_contended
        // (core/pagetable.h) does: any other change is a writer that should
        // not exist, and the guest gets its #PF.
        if ((seen ^ cur) & ~pte_bit::AD) return -XEN_EBUSY;
        hv.note_install_retry();
        cur = seen;
    }
    return -XEN_EBUSY;
}

} // namespace

int emulate_l1_write(Hypervisor& hv, DomId self, Mfn l1, unsigned index, const PtWrite& w, uint64_t& old)
{
    if (index >= kEntriesPerTable) return -XEN_EINVAL;
    return write_l1(hv, hv.domain(self), self, l1, false, index, w, old);
}

int emulate_pt_write(Hypervisor& hv, const Vcpu& v, Vaddr va, const PtWrite& w, uint64_t& old)
{
    // The walk one level past the L1: its entry names the frame written (a
    // frame of the machine, which write_l1 need not test again).
    const Domain& d = *v.domain;
    Mfn m;
    if (!walk_tables<1>(hv, v, d.id, va, m)) return -XEN_EINVAL;
    return write_l1(hv, &d, d.id, m, true, unsigned((va.v & (kPageSize - 1)) / sizeof(uint64_t)), w, old);
}

} // namespace pvmmu
