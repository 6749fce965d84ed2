// The update modes of the mprotect benchmark; see modes.h. The library's
// levels give flag-range (cmd 4 runs + cmd-2 arrays), atomic-array (cmd-2 arrays
// of a whole L1) and linux-xen (cmd 2, 31 PTEs per mmu_update, each the one
// entry of a multicall: Linux on Xen's lazy-MMU batch, whose 512-byte argument
// space holds at most 31 mmu_update_t). The hooks below give the
// rest; each runs under the L1's lock that mprotect holds, like the library's
// own range updater, and records the reductions it makes for mprotect's flush.
#include "modes.h"

#include "guest/mmu_batch.h"
#include "guest/pte.h"
#include "guest/pte_ops.h"
#include "guest/runtime.h"
#include "guest/tlb.h"

namespace pvmmu::guest::bench {

namespace {

constexpr unsigned kMaxVcpus = 64;
Counter retries[kMaxVcpus];

// Calls fn(ref, e, nv) for every present entry of r that prot changes (the
// benchmark's regions have no PROT_NONE pages and no holes).
template <class F>
int for_each_change(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan, F&& fn)
{
    for (unsigned k = 0; k < r.count; ++k) {
        const PteRef ref{r.l1, r.first + k};
        uint64_t e;
        if (!pte_read(c, ref, e)) return -XEN_EFAULT;
        if (!pte_present(e)) continue;
        const uint64_t nv = pte_modify(e, prot);
        if (pte_reduces(e, nv)) plan.add(r.va + k * kPageSize);
        if (!((e ^ nv) & ~pte::AD)) continue;
        if (int rc = fn(ref, e, nv)) return rc;
    }
    return 0;
}

// native: the entry changed in place by the guest's own cmpxchg loop, as a
// kernel with writable page tables does; hardware A/D set meanwhile make the
// cmpxchg fail and are kept by the next round.
int native_range(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan, void*)
{
    return for_each_change(c, r, prot, plan, [&](PteRef ref, uint64_t e, uint64_t) {
        const Maddr at = pte_maddr(*c.guest, ref);
        for (uint64_t cur = e;;) {
            bool swapped = false;
            if (!rt::native_pte_cmpxchg(at, cur, pte_modify(cur, prot), swapped)) return -XEN_EPERM;
            if (swapped) return 0;
            ++retries[c.id % kMaxVcpus];
        }
    });
}

// per-pte: pre-2008 Xen guests, ptep_get_and_clear then set_pte, one hypercall
// each (at the Normal level both are cmd 0; the clear assumes the worst A/D).
int per_pte_range(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan, void*)
{
    return for_each_change(c, r, prot, plan, [&](PteRef ref, uint64_t, uint64_t) {
        PteLock l(c, ref, PteLock::Held{});
        uint64_t old;
        if (int rc = ptep_get_and_clear(c, l, old)) return rc;
        return set_pte(c, l, pte_modify(old, prot));
    });
}

// unsafe: cmd-0 read-modify-write of a whole L1 per call, no get_and_clear: an
// A or D bit set between the read and the install is overwritten (lost).
int unsafe_range(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan, void*)
{
    MmuBatch b(c, r.l1, c.guest->config.batch_ptes);
    const auto add = [&](PteRef ref, uint64_t, uint64_t nv) { return b.add(MMU_NORMAL_PT_UPDATE, ref.index, nv); };
    if (int rc = for_each_change(c, r, prot, plan, add)) return rc;
    return b.flush();
}

const Mode kModes[] = {
    {"native", MmuLevel::FlagRange, kDefaultBatchPtes, native_range, true, false},
    {"per-pte", MmuLevel::Normal, kDefaultBatchPtes, per_pte_range, false, false},
    {"linux-xen", MmuLevel::Atomic, 31, nullptr, false, true},
    {"atomic-array", MmuLevel::Atomic, kDefaultBatchPtes, nullptr, false, false},
    {"flag-range", MmuLevel::FlagRange, kDefaultBatchPtes, nullptr, false, false},
    {"unsafe", MmuLevel::FlagRange, kDefaultBatchPtes, unsafe_range, false, false},
};

} // namespace

const Mode* find_mode(const char* name, unsigned len)
{
    for (const Mode& m : kModes) {
        unsigned i = 0;
        while (i < len && m.name[i] == name[i]) ++i;
        if (i == len && m.name[len] == '\0') return &m;
    }
    return nullptr;
}

const Mode& mode_at(unsigned i) { return kModes[i]; }
unsigned nr_modes() { return sizeof(kModes) / sizeof(kModes[0]); }

void use_mode(Guest& g, const Mode& m)
{
    g.config.level_cap = m.cap;
    g.config.batch_ptes = m.batch_ptes;
    g.config.change_pte_range = m.hook;
    g.config.change_pte_range_ctx = nullptr;
    g.config.multicall = m.multicall;
}

uint64_t native_retries(unsigned vcpu) { return retries[vcpu % kMaxVcpus].get(); }

} // namespace pvmmu::guest::bench
