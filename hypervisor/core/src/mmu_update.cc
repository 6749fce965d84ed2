// HYPERVISOR_mmu_update (hypercall 1): a batch of {ptr, val} requests, the command
// in ptr & 7 (SPEC §3). Xen's batch semantics: in order; the first failure stops
// the batch; *pdone counts completed requests; a failed request changes nothing;
// preempted after a bounded amount of work and continued where it stopped.
#include "core/flag_range.h"
#include "core/guest_args.h"
#include "core/hypercall.h"
#include "core/table_cursor.h"

namespace pvmmu {

namespace {

struct Batch {
    Hypervisor& hv;
    Domain& d;
    MapContext ctx;
    TableCursor cursor;

    int operator()(const mmu_update_t& req, uint32_t& units);
    int run(const mmu_update_t* reqs, uint32_t n, uint32_t& did);
    void finish() { cursor.release(); }
};

// cmd 0 and cmd 2: one checked entry update of a table of any level.
template <bool FoldAd>
int pt_update(Batch& b, const mmu_update_t& req)
{
    const Maddr a{req.ptr & ~uint64_t(PVMMU_MMU_CMD_MASK)};
    const unsigned level = b.cursor.acquire(a.mfn());
    if (!level) return -XEN_EINVAL;
    const unsigned index = a.offset() / sizeof(uint64_t);
    if (level == 4 && b.hv.l4_slot_reserved(index)) return -XEN_EINVAL;
    return mod_entry<FoldAd>(b.hv, Level(level), b.cursor.table() + index, Pte{req.val}, b.ctx);
}

// cmd 1: the machine-to-physical entry of frame ptr >> 12. The offset bits of ptr
// (11:3) must be zero: a misaligned ptr is a guest bug, not a frame.
int machphys_update(Batch& b, const mmu_update_t& req)
{
    const Maddr a{req.ptr & ~uint64_t(PVMMU_MMU_CMD_MASK)};
    if (a.offset() != 0 || !b.hv.mem().valid(a.mfn())) return -XEN_EINVAL;
    const DomId owner = b.hv.frame(a.mfn()).owner.load(std::memory_order_acquire);
    if (owner != b.ctx.self && owner != b.ctx.foreign) return -XEN_EPERM;
    b.hv.m2p(a.mfn()) = req.val;
    return 0;
}

// cmd 4; `units` receives the work done, for the preemption budget.
int range_update(Batch& b, const mmu_update_t& req, uint32_t& units)
{
    if (!abi::flag_range_mbz_ok(req.val)) return -XEN_EINVAL;
    const abi::FlagRange fr = abi::decode_flag_range(req.val);
    if (fr.count == 0) return 0;
    units = fr.count;
    const Maddr a{req.ptr & ~uint64_t(PVMMU_MMU_CMD_MASK)};
    if (b.cursor.acquire(a.mfn()) != 1) return -XEN_EINVAL;
    return flag_range_update(b.hv, b.cursor.table(), a.offset() / sizeof(uint64_t), fr);
}

// A run of cmd-0 or cmd-2 requests on the L1 the cursor holds, as pt_update
// would do them one by one, without the per-request lookup, dispatch and policy
// check: the mprotect hot path (SPEC §4 "Cost"). It does flag-only changes and
// same-frame RW changes (one writable type reference each), failing as pt_update
// would; at anything else (another command, page or frame, a P change, a
// disallowed flag) it stops with that request untouched and leaves it to
// pt_update, which does or fails it with the full checks.
// Kept out of line: the loop gets every register to itself (per run, not per PTE).
template <bool FoldAd>
[[gnu::noinline]] int l1_run(Hypervisor& hv, uint64_t* t, uint64_t want, const mmu_update_t* reqs,
                             uint32_t n, uint32_t& did)
{
    constexpr uint64_t kEntryBits = kPageSize - sizeof(uint64_t);   // ptr 11:3: the entry
    constexpr uint64_t kRefBits = pte_bit::ADDR | pte_bit::P | pte_bit::RW;
    char* const page = reinterpret_cast<char*>(t);
    int rc = 0;
    const mmu_update_t* r = reqs;
    for (const mmu_update_t* end = reqs + n; r != end; ++r) {
        // ptr - want is the entry's byte offset exactly when ptr names an entry
        // of this page with this command: one check for both.
        const uint64_t off = r->ptr - want;
        uint64_t nv = r->val;
        if (off & ~kEntryBits) break;
        if (!(nv & pte_bit::P) || (nv & disallow::kL1)) break;
        nv |= pte_bit::US;   // adjust_guest_entry of a present entry
        uint64_t* slot = reinterpret_cast<uint64_t*>(page + off);
        uint64_t old = load_entry(slot);
        const uint64_t ref_change = (old ^ nv) & kRefBits;
        if (ref_change == 0) [[likely]] {
            if ((rc = install_entry<FoldAd>(slot, old, nv))) break;
            continue;
        }
        if (ref_change != pte_bit::RW) break;
        // The same frame stays mapped; only its writable type reference changes,
        // taken before the install and dropped after it, as mod_entry_refs does.
        const Mfn m = Pte{nv}.mfn();
        if (!(old & pte_bit::RW)) {
            if ((rc = get_writable_type(hv, m))) break;
            if ((rc = install_entry<FoldAd>(slot, old, nv))) {
                put_page_type(hv, m);
                break;
            }
        } else {
            if ((rc = install_entry<FoldAd>(slot, old, nv))) break;
            put_page_type(hv, m);
        }
    }
    did = uint32_t(r - reqs);
    return rc;
}

int Batch::run(const mmu_update_t* reqs, uint32_t n, uint32_t& did)
{
    did = 0;
    if (n == 0 || cursor.level() != 1) return 0;
    const unsigned cmd = reqs[0].ptr & PVMMU_MMU_CMD_MASK;
    const uint64_t want = maddr_of(cursor.mfn()).v | cmd;
    if (cmd == MMU_ATOMIC_PT_UPDATE && d.policy.allows(Perm::MmuAtomic))
        return l1_run<true>(hv, cursor.table(), want, reqs, n, did);
    if (cmd == MMU_NORMAL_PT_UPDATE && d.policy.allows(Perm::MmuNormal))
        return l1_run<false>(hv, cursor.table(), want, reqs, n, did);
    return 0;
}

int Batch::operator()(const mmu_update_t& req, uint32_t& units)
{
    Batch& b = *this;
    const Policy& p = d.policy;
    switch (req.ptr & PVMMU_MMU_CMD_MASK) {
    case MMU_NORMAL_PT_UPDATE:
        return p.allows(Perm::MmuNormal) ? pt_update<false>(b, req) : -XEN_EPERM;
    case MMU_ATOMIC_PT_UPDATE:
        return p.allows(Perm::MmuAtomic) ? pt_update<true>(b, req) : -XEN_EPERM;
    case MMU_MACHPHYS_UPDATE:
        return p.allows(Perm::MmuMachphys) ? machphys_update(b, req) : -XEN_EPERM;
    case MMU_FLAG_RANGE_UPDATE:
        return p.allows(Perm::MmuFlagRange) ? range_update(b, req, units) : -XEN_EPERM;
    default:   // 3 (Xen's NO_TRANSLATE, meaningless without translation), 5-7
        return -XEN_ENOSYS;
    }
}

} // namespace

HcResult do_mmu_update(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    Batch b{hv, *v.domain, {}, TableCursor(hv, v.domain->id)};
    const long rc = resolve_foreign(hv, b.d, f.arg[3], b.ctx);
    return run_batch<mmu_update_t>(hv, v, f, rc, b);
}

} // namespace pvmmu
