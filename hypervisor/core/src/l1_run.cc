// The fused cmd-0 / cmd-2 path; see core/l1_run.h. Each request gets exactly the
// checks and reference changes of mod_entry on an L1 (core/pagetable.h) in the
// same order; only the work that is the same for the whole run is hoisted.
#include "core/l1_run.h"

#include "core/pagetable.h"

namespace pvmmu {

namespace {

// Where a chunk stopped: at its end, or at the first request not done (rc != 0
// if that one failed).
struct Stop {
    const mmu_update_t* at;
    int rc;
};

// What only the RW changes of a run need, behind one pointer: one register in
// the loop. Passing `hv` and the owner check's `ctx` apart would take two, and
// cost a spill on every RW change.
struct RunRefs {
    Hypervisor& hv;
    MapContext ctx;
};

// Requests [r, end) on the table at `page`. Out of line, so that the loop has the
// registers to itself (one call per chunk, not per PTE).
template <bool FoldAd>
[[gnu::noinline]] Stop run_chunk(const RunRefs& x, char* page, uint64_t want, const mmu_update_t* r,
                                 const mmu_update_t* end)
{
    Hypervisor& hv = x.hv;
    constexpr uint64_t kEntryBits = kPageSize - sizeof(uint64_t);   // ptr 11:3: the entry
    constexpr uint64_t kRefBits = pte_bit::ADDR | pte_bit::P | pte_bit::RW;
    int rc = 0;
    for (; r != end; ++r) {
        // ptr - want is the entry's byte offset exactly when ptr names an entry
        // of this page with this command: one check for both.
        const uint64_t off = r->ptr - want;
        uint64_t nv = r->val;
        if (off & ~kEntryBits) break;
        if (!(nv & pte_bit::P) || (nv & disallow::kL1)) break;   // pt_update decides
        nv |= pte_bit::US;   // adjust_guest_entry of a present entry
        uint64_t* slot = reinterpret_cast<uint64_t*>(page + off);
        uint64_t old = load_entry(slot);
        const uint64_t ref_change = (old ^ nv) & kRefBits;
        if (ref_change == 0) [[likely]] {
            if ((rc = install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv))) break;
            continue;
        }
        if (ref_change != pte_bit::RW) break;
        // The same frame stays mapped; only its writable type reference changes,
        // taken before the install and dropped after it, as mod_entry_refs does.
        const Mfn m = Pte{nv}.mfn();
        if (!(old & pte_bit::RW)) {
            if ((rc = get_raised_type(hv, m, x.ctx))) break;
            if ((rc = install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv))) {
                put_page_type(hv, m);
                break;
            }
        } else {
            if ((rc = install_entry<kSameFrame<FoldAd>>(hv, slot, old, nv))) break;
            put_page_type(hv, m);
        }
    }
    return Stop{r, rc};
}

} // namespace

template <bool FoldAd>
int l1_run(Hypervisor& hv, RequestReader<mmu_update_t>& in, Mfn l1, unsigned cmd, const MapContext& ctx,
           uint32_t i, uint32_t end, uint32_t& did)
{
    const uint64_t want = maddr_of(l1).v | cmd;
    char* const page = static_cast<char*>(hv.mem().frame(l1));
    const RunRefs refs{hv, ctx};
    return in.run(i, end, did, [&](const mmu_update_t* r, uint32_t n, int& rc) {
        const Stop stop = run_chunk<FoldAd>(refs, page, want, r, r + n);
        rc = stop.rc;
        return uint32_t(stop.at - r);
    });
}

template int l1_run<true>(Hypervisor&, RequestReader<mmu_update_t>&, Mfn, unsigned, const MapContext&,
                          uint32_t, uint32_t, uint32_t&);
template int l1_run<false>(Hypervisor&, RequestReader<mmu_update_t>&, Mfn, unsigned, const MapContext&,
                           uint32_t, uint32_t, uint32_t&);

} // namespace pvmmu
