// HYPERVISOR_mmu_update (hypercall 1): a batch of {ptr, val} requests, the command
// in ptr & 7 (docs/design.md §3). Xen's batch semantics: in order; the first failure stops
// the batch; *pdone counts completed requests; a failed request changes nothing;
// preempted after a bounded amount of work and continued where it stopped.
#include "core/flag_range.h"
#include "core/batch.h"
#include "core/guest_args.h"
#include "core/hypercall.h"
#include "core/l1_run.h"
#include "core/table_cursor.h"
#include "get_page.h"

namespace pvmmu {

namespace {

struct Batch {
    Hypervisor& hv;
    Domain& d;
    MapContext ctx;
    TableCursor cursor;

    // Inline in both of do_mmu_update's paths (core/batch.h run_batch, run_one).
    [[gnu::always_inline]] int operator()(const mmu_update_t& req, uint32_t& units);
    int run(RequestReader<mmu_update_t>& in, uint32_t i, uint32_t end, uint32_t& did);
    int plain_run(RequestReader<mmu_update_t>& in, uint32_t i, uint32_t end, Mfn m, unsigned cmd, uint32_t& did);
    void finish() { cursor.release(); }
};

// cmd 0, 2 or 3 on a frame of the caller that is no page table: Xen's
// do_mmu_update stores `val` as given if the frame can be
// typed writable, and refuses it (-EINVAL) otherwise. Linux writes every PTE
// with cmd 0, those of a table not yet pinned too (its __xen_set_pte): a new mm's tables before its first switch, exec's among them.
int plain_update(Batch& b, Maddr a, uint64_t val)
{
    const Mfn m = a.mfn();
    if (get_page_inline(b.hv, m, b.d.id)) return -XEN_EINVAL;
    const int rc = get_writable_type(b.hv, m);
    if (rc == 0) {
        std::atomic_ref<uint64_t>(b.hv.mem().table(m)[a.offset() / sizeof(uint64_t)])
            .store(val, std::memory_order_relaxed);
        put_page_type(b.hv, m);
    }
    put_page(b.hv, m);
    return rc ? -XEN_EINVAL : 0;
}

// cmd 0, cmd 2 and cmd 3: one checked entry update of a table of any level.
// Inline into Batch::operator(): a one-request call's frame set-up is paid once.
template <bool FoldAd>
[[gnu::always_inline]] inline int pt_update(Batch& b, const mmu_update_t& req)
{
    const Maddr a{req.ptr & ~uint64_t(PVMMU_MMU_CMD_MASK)};
    const unsigned level = b.cursor.acquire(a.mfn());
    if (!level) return plain_update(b, a, req.val);
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
    return flag_range_update(b.hv, b.cursor.table(), a.offset() / sizeof(uint64_t), fr, b.ctx);
}

// Runs of cmd 0 or 2 on an L1 go the fused way. The cursor moves to the
// request's table as pt_update would move it; a table of another level, or none,
// is left to pt_update. So is a last request alone: the run's set-up (its
// references, its chunk) costs more than it saves on one entry, and Linux
// sets a PTE outside lazy-MMU mode, in a page fault, with a one-request call
// (its __xen_set_pte); pt_update does the same change.
int Batch::run(RequestReader<mmu_update_t>& in, uint32_t i, uint32_t end, uint32_t& did)
{
    did = 0;
    if (end - i < 2) return 0;
    uint32_t n;
    const mmu_update_t* req = in.at(i, n);
    if (!req) return -XEN_EFAULT;
    const unsigned cmd = req->ptr & PVMMU_MMU_CMD_MASK;
    const bool atomic = cmd == MMU_ATOMIC_PT_UPDATE;
    const bool normal = cmd == MMU_NORMAL_PT_UPDATE || cmd == MMU_PT_UPDATE_NO_TRANSLATE;
    if (!(atomic ? d.policy.allows(Perm::MmuAtomic) : normal && d.policy.allows(Perm::MmuNormal))) return 0;
    const Maddr a{req->ptr & ~uint64_t(PVMMU_MMU_CMD_MASK)};
    const unsigned level = cursor.acquire(a.mfn());
    if (level == 0) return plain_run(in, i, end, a.mfn(), cmd, did);
    if (level != 1) return 0;
    return atomic ? l1_run<true>(hv, in, cursor.mfn(), cmd, ctx, i, end, did)
                  : l1_run<false>(hv, in, cursor.mfn(), cmd, ctx, i, end, did);
}

// A run of plain updates (plain_update) on frame m, which is no table (a new
// mm's, not yet pinned: Linux fills it by cmd 0 in batches), all with
// command cmd: the frame's general and writable type references taken once
// for the run, each value stored as given. Nothing of a request can fail
// once they are held, so the run stops only at another frame or command
// (the handler's, or the next run's, from there) or an unreadable request
// (-EFAULT, as the handler would answer); holding the references keeps the
// frame from becoming a table until the run ends, as if a concurrent pin
// came after it. The frame was looked up by the caller, once.
[[gnu::noinline]] int Batch::plain_run(RequestReader<mmu_update_t>& in, uint32_t i, uint32_t end, Mfn m,
                                     unsigned cmd, uint32_t& did)
{
    if (get_page_inline(hv, m, d.id)) return -XEN_EINVAL;
    if (get_writable_type(hv, m)) {
        put_page(hv, m);
        return -XEN_EINVAL;
    }
    uint64_t* const t = hv.mem().table(m);
    const uint64_t want = maddr_of(m).v | cmd;
    constexpr uint64_t kEntryBits = kPageSize - sizeof(uint64_t);   // ptr 11:3: the word
    const int rc = in.run(i, end, did, [&](const mmu_update_t* r, uint32_t n, int&) {
        uint32_t k = 0;
        for (; k < n; ++k) {
            const uint64_t off = r[k].ptr - want;   // the word's offset exactly when ptr names this frame and cmd
            if (off & ~kEntryBits) break;
            std::atomic_ref<uint64_t>(t[off / sizeof(uint64_t)]).store(r[k].val, std::memory_order_relaxed);
        }
        return k;
    });
    put_page_type(hv, m);
    put_page(hv, m);
    return rc;
}

inline int Batch::operator()(const mmu_update_t& req, uint32_t& units)
{
    Batch& b = *this;
    const Policy& p = d.policy;
    const unsigned cmd = req.ptr & PVMMU_MMU_CMD_MASK;
    // Linux's PTE writes (cmd 0) ahead of the switch's table jump.
    if (cmd == MMU_NORMAL_PT_UPDATE) return p.allows(Perm::MmuNormal) ? pt_update<false>(b, req) : -XEN_EPERM;
    switch (cmd) {
    case MMU_PT_UPDATE_NO_TRANSLATE:   // "val not translated": for a PV guest, cmd 0 (Xen does so)
        return p.allows(Perm::MmuNormal) ? pt_update<false>(b, req) : -XEN_EPERM;
    case MMU_ATOMIC_PT_UPDATE:
        return p.allows(Perm::MmuAtomic) ? pt_update<true>(b, req) : -XEN_EPERM;
    case MMU_MACHPHYS_UPDATE:
        return p.allows(Perm::MmuMachphys) ? machphys_update(b, req) : -XEN_EPERM;
    case MMU_FLAG_RANGE_UPDATE:
        return p.allows(Perm::MmuFlagRange) ? range_update(b, req, units) : -XEN_EPERM;
    default:   // 5-7
        return -XEN_ENOSYS;
    }
}

} // namespace

namespace {

// A batch of one request (core/batch.h run_one).
[[gnu::noinline]] HcResult mmu_update_one(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    Batch b{hv, *v.domain, {}, TableCursor(hv, v.domain->id)};
    const long rc = resolve_foreign(hv, b.d, f.arg[3], b.ctx);
    return run_one<mmu_update_t>(hv, v, f, rc, b);
}

} // namespace

HcResult do_mmu_update(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    if (uint32_t(f.arg[1]) == 1) return mmu_update_one(hv, v, f);
    Batch b{hv, *v.domain, {}, TableCursor(hv, v.domain->id)};
    const long rc = resolve_foreign(hv, b.d, f.arg[3], b.ctx);
    return run_batch<mmu_update_t>(hv, v, f, rc, b);
}

} // namespace pvmmu
