// HYPERVISOR_grant_table_op (hypercall 20): the table's own sub-ops
// (setup_table, query_size, set_version, get_version, get_status_frames,
// swap_grant_ref) and the batch loop of map, unmap, unmap_and_replace and
// copy (gnttab_map.cc, gnttab_copy.cc), each answered as Xen 4.17 answers
// with grant table v2 disabled (docs/abi.md "Grant tables").
#include <stddef.h>

#include "core/grant_table.h"

namespace pvmmu {

namespace {

// Xen: the sub-op in cmd's low 12 bits; the bits above are the continuation
// state of cache_flush alone.
constexpr unsigned kCmdMask = (1u << 12) - 1;

// The domain a table sub-op names: the caller's own, or -ESRCH / -EPERM as
// Xen's rcu_lock_domain_by_any_id and XSM_TARGET answer an unprivileged
// caller (the status of those that report in status: GNTST_bad_domain and
// GNTST_permission_denied).
int target_domain(Hypervisor& hv, Domain& d, DomId dom, Domain*& out)
{
    out = nullptr;
    if (dom == DOMID_SELF || dom == d.id) {
        out = &d;
        return 0;
    }
    return hv.domain(dom) ? -XEN_EPERM : -XEN_ESRCH;
}

int16_t target_status(int rc) { return rc == -XEN_ESRCH ? GNTST_bad_domain : GNTST_permission_denied; }

template <class T>
int read(Hypervisor& hv, Vcpu& v, uint64_t addr, T& out)
{
    return hv.platform().copy_from_guest(v, &out, Vaddr{addr}, sizeof(T)) ? -XEN_EFAULT : 0;
}

template <class T>
int write_status(Hypervisor& hv, Vcpu& v, uint64_t addr, const T& op)
{
    return hv.platform().copy_to_guest(v, Vaddr{addr + offsetof(T, status)}, &op.status, sizeof(op.status))
               ? -XEN_EFAULT
               : 0;
}

long setup_table(Hypervisor& hv, Vcpu& v, uint64_t uop)
{
    gnttab_setup_table_t op;
    if (read(hv, v, uop, op)) return -XEN_EFAULT;
    Domain* t;
    if (int rc = target_domain(hv, *v.domain, op.dom, t)) {
        op.status = target_status(rc);
    } else if (!t->grants) {
        op.status = GNTST_general_error;
    } else {
        GrantTable& gt = *t->grants;
        LockGuard g(gt.lock, hv.platform());
        op.status = op.nr_frames > gt.max_frames() ? int16_t(GNTST_general_error) : gt.grow(hv, op.nr_frames);
        for (uint32_t i = 0; op.status == GNTST_okay && i < op.nr_frames; ++i) {
            const xen_pfn_t f = gt.frame(i).v;
            if (hv.platform().copy_to_guest(v, Vaddr{uint64_t(op.frame_list.p) + i * sizeof(f)}, &f, sizeof(f)))
                op.status = GNTST_bad_virt_addr;
        }
    }
    return write_status(hv, v, uop, op);
}

long query_size(Hypervisor& hv, Vcpu& v, uint64_t uop)
{
    gnttab_query_size_t op;
    if (read(hv, v, uop, op)) return -XEN_EFAULT;
    Domain* t;
    if (int rc = target_domain(hv, *v.domain, op.dom, t)) {
        op.status = target_status(rc);
    } else {
        LockGuard g(t->grants->lock, hv.platform());
        op.nr_frames = t->grants->nr_frames();
        op.max_nr_frames = t->grants->max_frames();
        op.status = GNTST_okay;
    }
    return hv.platform().copy_to_guest(v, Vaddr{uop}, &op, sizeof(op)) ? -XEN_EFAULT : 0;
}

// Version 1 only: 2 is -ENOSYS, as Xen answers with v2 disabled ("behave as
// before set_version was introduced"), anything else -EINVAL; the version in
// force (1) is written back in every case.
long set_version(Hypervisor& hv, Vcpu& v, uint64_t uop)
{
    gnttab_set_version_t op;
    if (read(hv, v, uop, op)) return -XEN_EFAULT;
    long rc = op.version == 1 ? 0 : op.version == 2 ? -XEN_ENOSYS : -XEN_EINVAL;
    op.version = 1;
    if (hv.platform().copy_to_guest(v, Vaddr{uop}, &op, sizeof(op))) rc = -XEN_EFAULT;
    return rc;
}

long get_version(Hypervisor& hv, Vcpu& v, uint64_t uop)
{
    gnttab_get_version_t op;
    if (read(hv, v, uop, op)) return -XEN_EFAULT;
    Domain* t;
    if (int rc = target_domain(hv, *v.domain, op.dom, t)) return rc;
    op.version = 1;
    return hv.platform().copy_to_guest(v, Vaddr{uop + offsetof(gnttab_get_version_t, version)}, &op.version,
                                       sizeof(op.version))
               ? -XEN_EFAULT
               : 0;
}

// v1 has no status frames: asking for none is GNTST_okay, for any
// GNTST_general_error, as Xen answers a v1 table.
long get_status_frames(Hypervisor& hv, Vcpu& v, uint64_t uop)
{
    gnttab_get_status_frames_t op;
    if (read(hv, v, uop, op)) return -XEN_EFAULT;
    Domain* t;
    if (int rc = target_domain(hv, *v.domain, op.dom, t)) op.status = target_status(rc);
    else op.status = op.nr_frames ? int16_t(GNTST_general_error) : int16_t(GNTST_okay);
    return write_status(hv, v, uop, op);
}

void swap_one(Hypervisor& hv, GrantTable& gt, gnttab_swap_grant_ref_t& op)
{
    LockGuard g(gt.lock, hv.platform());
    if (op.ref_a >= gt.nr_entries() || op.ref_b >= gt.nr_entries()) {
        op.status = GNTST_bad_gntref;
        return;
    }
    op.status = GNTST_okay;
    if (op.ref_a == op.ref_b) return;
    if (gt.active(op.ref_a).pinned() || gt.active(op.ref_b).pinned()) {
        op.status = GNTST_eagain;
        return;
    }
    auto a = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(gt.entry(hv, op.ref_a)));
    auto b = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(gt.entry(hv, op.ref_b)));
    const uint64_t x = a.load();
    a.store(b.load());
    b.store(x);
}

// The batch sub-ops: one request of type T at a time, read, done and its
// result written back; preempted after preempt_budget requests with uop and
// count describing what is left.
template <class T, class Do>
HcResult batch(Hypervisor& hv, Vcpu& v, HypercallFrame& f, bool whole_back, Do one)
{
    const uint64_t uop = f.arg[1];
    const uint32_t count = uint32_t(f.arg[2]);
    const uint64_t budget = hv.config().preempt_budget ? hv.config().preempt_budget : 1;
    for (uint32_t i = 0; i < count; ++i) {
        if (i == budget) {
            f.arg[1] = uop + uint64_t(i) * sizeof(T);
            f.arg[2] = count - i;
            return preempted();
        }
        const uint64_t at = uop + uint64_t(i) * sizeof(T);
        T op;
        if (read(hv, v, at, op)) return done(-XEN_EFAULT);
        one(op);
        const int rc = whole_back ? (hv.platform().copy_to_guest(v, Vaddr{at}, &op, sizeof(op)) ? -XEN_EFAULT : 0)
                                  : write_status(hv, v, at, op);
        if (rc) return done(rc);
    }
    return done(0);
}

} // namespace

HcResult do_grant_table_op(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    Domain& d = *v.domain;
    if (!d.grants) return done(-XEN_ENOSYS);
    const uint64_t cmd = f.arg[0] & 0xffffffffu;
    const uint64_t uop = f.arg[1];
    const uint32_t count = uint32_t(f.arg[2]);
    if (int32_t(count) < 0) return done(-XEN_EINVAL);
    if ((cmd & ~uint64_t(kCmdMask)) && (cmd & kCmdMask) != GNTTABOP_cache_flush) return done(-XEN_EINVAL);
    switch (cmd & kCmdMask) {
    case GNTTABOP_map_grant_ref:
        return batch<gnttab_map_grant_ref_t>(hv, v, f, true, [&](auto& op) { grant_map_one(hv, v, op); });
    case GNTTABOP_unmap_grant_ref:
        return batch<gnttab_unmap_grant_ref_t>(hv, v, f, false, [&](auto& op) {
            grant_unmap_one(hv, v, op.host_addr, 0, op.handle, op.status, false);
        });
    case GNTTABOP_unmap_and_replace:
        return batch<gnttab_unmap_and_replace_t>(hv, v, f, false, [&](auto& op) {
            grant_unmap_one(hv, v, op.host_addr, op.new_addr, op.handle, op.status, true);
        });
    case GNTTABOP_copy:
        return batch<gnttab_copy_t>(hv, v, f, false, [&](auto& op) { grant_copy_one(hv, v, op); });
    case GNTTABOP_swap_grant_ref:
        return batch<gnttab_swap_grant_ref_t>(hv, v, f, false, [&](auto& op) { swap_one(hv, *d.grants, op); });
    case GNTTABOP_setup_table:
        return done(count != 1 ? -XEN_EINVAL : setup_table(hv, v, uop));
    case GNTTABOP_query_size:
        return done(count != 1 ? -XEN_EINVAL : query_size(hv, v, uop));
    case GNTTABOP_set_version:
        return done(set_version(hv, v, uop));
    case GNTTABOP_get_version:
        return done(get_version(hv, v, uop));
    case GNTTABOP_get_status_frames:
        return done(count != 1 ? -XEN_EINVAL : get_status_frames(hv, v, uop));
    default:
        // transfer (no page allocator to give the sender a frame back),
        // cache_flush (x86 caches are coherent; no device maps), dump_table
        // (gone from Xen too): -ENOSYS (docs/abi.md "Grant tables").
        return done(-XEN_ENOSYS);
    }
}

} // namespace pvmmu
