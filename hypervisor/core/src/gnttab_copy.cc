// GNTTABOP_copy (core/grant_table.h): bytes from one frame to another, each
// named by a grant reference of some domain (granted to the caller) or by the
// caller's own frame number (DOMID_SELF only). For the copy the source is
// pinned read-only and the destination writable, as a mapping would pin them,
// and each frame holds the references a mapping of it would: a general one,
// and for the destination a writable type reference, so a copy never writes
// a page table, a descriptor frame or a grant given read-only. Refusals are
// Xen's GNTST_* and change nothing.
#include <string.h>

#include "core/grant_table.h"
#include "core/refs.h"

namespace pvmmu {

namespace {

// One side of a copy, acquired: the frame and what must be given back.
struct CopySide {
    Mfn frame{0};
    GrantTable* pinned = nullptr;   // the table whose entry is pinned, or none
    grant_ref_t ref = 0;
    bool refs = false;              // references taken on `frame`
    bool writable = false;
};

void release(Hypervisor& hv, CopySide& s)
{
    if (s.refs) {
        if (s.writable) put_page_type(hv, s.frame);
        put_page(hv, s.frame);
    }
    bool last = false;
    GrantTable* gt = s.pinned;
    if (gt) {
        LockGuard g(gt->lock, hv.platform());
        last = grant_unpin(hv, *gt, s.ref, !s.writable);
    }
    s = CopySide{};
    // A copy that pinned before the granter's teardown began may hold its
    // last pin (core/grant_table.h grant_unpin).
    if (last) grant_relinquish_owner(hv, *gt);
}

int16_t acquire(Hypervisor& hv, Domain& d, const gnttab_copy::gnttab_copy_ptr& p, bool by_gref, bool dest,
                CopySide& out)
{
    out.writable = dest;
    DomId owner;
    if (by_gref) {
        Domain* rd = p.domid == DOMID_SELF ? &d : hv.domain(p.domid);
        if (!rd || !rd->grants) return GNTST_bad_domain;
        if (rd != &d && !d.policy.allows(Perm::GrantMap)) return GNTST_permission_denied;
        int16_t st;
        {
            LockGuard g(rd->grants->lock, hv.platform());
            st = grant_pin(hv, *rd->grants, d.id, p.u.ref, !dest, out.frame);
        }
        if (st != GNTST_okay) return st;
        out.pinned = rd->grants;
        out.ref = p.u.ref;
        owner = rd->id;
    } else {
        // Xen: a frame number only of the caller's own frames.
        if (p.domid != DOMID_SELF && p.domid != d.id) return GNTST_permission_denied;
        out.frame = Mfn{p.u.gmfn};
        owner = d.id;
        if (!hv.mem().valid(out.frame) || hv.frame(out.frame).owner.load(std::memory_order_acquire) != d.id)
            return GNTST_bad_page;
    }
    if (get_page(hv, out.frame, owner)) return by_gref ? GNTST_general_error : GNTST_bad_page;
    if (dest && get_writable_type(hv, out.frame)) {
        put_page(hv, out.frame);
        return GNTST_general_error;
    }
    out.refs = true;
    return GNTST_okay;
}

} // namespace

void grant_copy_one(Hypervisor& hv, Vcpu& v, gnttab_copy_t& op)
{
    Domain& d = *v.domain;
    // Both ends within their page (Xen checks the sum, so a length that
    // wraps a 16-bit offset is refused as well).
    if (uint32_t(op.source.offset) + op.len > kPageSize || uint32_t(op.dest.offset) + op.len > kPageSize) {
        op.status = GNTST_bad_copy_arg;
        return;
    }
    const bool src_gref = op.flags & GNTCOPY_source_gref;
    const bool dst_gref = op.flags & GNTCOPY_dest_gref;
    if ((!src_gref && op.source.domid != DOMID_SELF) || (!dst_gref && op.dest.domid != DOMID_SELF)) {
        op.status = GNTST_permission_denied;
        return;
    }
    CopySide src, dst;
    int16_t st = acquire(hv, d, op.source, src_gref, false, src);
    if (st == GNTST_okay) st = acquire(hv, d, op.dest, dst_gref, true, dst);
    if (st == GNTST_okay && op.len) {
        const auto* from = static_cast<const uint8_t*>(hv.mem().frame(src.frame)) + op.source.offset;
        auto* to = static_cast<uint8_t*>(hv.mem().frame(dst.frame)) + op.dest.offset;
        memmove(to, from, op.len);
    }
    release(hv, dst);
    release(hv, src);
    op.status = st;
}

} // namespace pvmmu
