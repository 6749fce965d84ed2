// HYPERVISOR_mmuext_op (hypercall 26): pinning, base pointers and TLB flushes,
// batched with the same semantics as mmu_update (docs/design.md §3).
#include "core/batch.h"
#include "core/guest_args.h"
#include "core/hypercall.h"

namespace pvmmu {

namespace {

int pin(Hypervisor& hv, Domain& d, Mfn m, Level level)
{
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    if (int rc = get_page_and_type(hv, m, d.id, table_type(level))) return rc;
    if (hv.frame(m).type_info.fetch_or(ti::kPinned, std::memory_order_acq_rel) & ti::kPinned) {
        put_page_and_type(hv, m);   // pinned already: Xen refuses a second pin
        return -XEN_EINVAL;
    }
    return 0;
}

int unpin(Hypervisor& hv, Domain& d, Mfn m)
{
    if (!hv.mem().valid(m)) return -XEN_EINVAL;
    FrameInfo& f = hv.frame(m);
    if (f.owner.load(std::memory_order_acquire) != d.id) return -XEN_EPERM;
    if (!(f.type_info.fetch_and(~ti::kPinned, std::memory_order_acq_rel) & ti::kPinned))
        return -XEN_EINVAL;
    put_page_and_type(hv, m);
    return 0;
}

// NEW_BASEPTR / NEW_USER_BASEPTR: the vCPU's root holds an L4 type reference.
// Only the kernel's L4 is reloaded. A hypercall comes from the guest's
// kernel mode only (a SYSCALL in its user mode is the guest's own system
// call, docs/abi.md §10 "Guest user mode"), so the user L4 is never the one
// in use here; the next entry into user mode loads it, as Xen's
// toggle_guest_pt, which is also why Xen does not touch CR3 for it.
int new_baseptr(Hypervisor& hv, Vcpu& v, Mfn m, bool user)
{
    Mfn& slot = user ? v.guest_table_user : v.guest_table;
    bool& has = user ? v.has_user_table : v.has_table;
    const bool none = user && m.v == 0;   // user: mfn 0 means no user table
    if (!none) {
        if (!hv.mem().valid(m)) return -XEN_EINVAL;
        if (int rc = get_page_and_type(hv, m, v.domain->id, PageType::L4)) return rc;
    }
    const Mfn old = slot;
    const bool had = has;
    slot = m;
    has = !none;
    if (!user) hv.platform().load_base(v);
    if (had) put_page_and_type(hv, old);
    return 0;
}

// SET_LDT(linear_addr, nr_ents), with Xen's checks (<xen/xen.h>: the
// address page-aligned, at most 8192 entries, as x86 allows; Xen's
// __addr_ok: canonical and not in the hypervisor's L4 slots): -EINVAL, here
// before the platform is asked, so the errno is the same on every platform
// (the sim, which has no LDT, answers -EOPNOTSUPP to the rest). The address
// of an empty LDT is not looked at (Linux clears its LDT with SET_LDT(0, 0)
// at boot, in a multicall).
int set_ldt(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op)
{
    constexpr uint32_t kMaxLdtEntries = 8192;   // a 64 KiB LDT: the selector's 13-bit index
    const uint32_t ents = op.arg2.nr_ents;
    const Vaddr base{ents ? op.arg1.linear_addr : 0};
    if ((base.v & (kPageSize - 1)) || ents > kMaxLdtEntries || !canonical(base) ||
        hv.l4_slot_reserved(table_index(base, Level::L4)))
        return -XEN_EINVAL;
    return hv.platform().set_ldt(v, base, ents);
}

int flush(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op, CpuMask cpus, bool page)
{
    FlushRequest req{};
    if (page) {
        req = FlushRequest{FlushKind::Page, Vaddr{op.arg1.linear_addr}};
        if (!canonical(req.va)) return -XEN_EINVAL;
    }
    (void)v;
    hv.platform().flush_tlbs(cpus, req);
    return 0;
}

int flush_multi(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op, bool page)
{
    // Any mask Xen's vcpumask_to_pcpumask refuses, an unreadable one too, is
    // -EINVAL to mmuext_op on Xen 4.17 (xen_conform_guest shows it).
    CpuMask cpus;
    if (read_vcpumask(hv, v, Vaddr{uint64_t(op.arg2.vcpumask.p)}, cpus)) return -XEN_EINVAL;
    return flush(hv, v, op, cpus, page);
}

int one_op(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op)
{
    Domain& d = *v.domain;
    const Mfn m{op.arg1.mfn};
    CpuMask self;
    self.set(v.cpu);
    switch (op.cmd) {
    case MMUEXT_PIN_L1_TABLE:
    case MMUEXT_PIN_L2_TABLE:
    case MMUEXT_PIN_L3_TABLE:
    case MMUEXT_PIN_L4_TABLE:
        if (!d.policy.allows(Perm::Pin)) return -XEN_EPERM;
        return pin(hv, d, m, Level(uint8_t(op.cmd - MMUEXT_PIN_L1_TABLE + 1)));
    case MMUEXT_UNPIN_TABLE:
        return d.policy.allows(Perm::Pin) ? unpin(hv, d, m) : -XEN_EPERM;
    case MMUEXT_NEW_BASEPTR:
    case MMUEXT_NEW_USER_BASEPTR:
        if (!d.policy.allows(Perm::BasePtr)) return -XEN_EPERM;
        return new_baseptr(hv, v, m, op.cmd == MMUEXT_NEW_USER_BASEPTR);
    case MMUEXT_SET_LDT:
        return set_ldt(hv, v, op);
    case MMUEXT_TLB_FLUSH_LOCAL:
    case MMUEXT_INVLPG_LOCAL:
    case MMUEXT_TLB_FLUSH_MULTI:
    case MMUEXT_INVLPG_MULTI:
    case MMUEXT_TLB_FLUSH_ALL:
    case MMUEXT_INVLPG_ALL:
        break;
    default:
        return -XEN_ENOSYS;
    }
    if (!d.policy.allows(Perm::TlbFlush)) return -XEN_EPERM;
    switch (op.cmd) {
    case MMUEXT_TLB_FLUSH_LOCAL: return flush(hv, v, op, self, false);
    case MMUEXT_INVLPG_LOCAL: return flush(hv, v, op, self, true);
    case MMUEXT_TLB_FLUSH_MULTI: return flush_multi(hv, v, op, false);
    case MMUEXT_INVLPG_MULTI: return flush_multi(hv, v, op, true);
    case MMUEXT_TLB_FLUSH_ALL: return flush(hv, v, op, d.all_cpus(), false);
    default: return flush(hv, v, op, d.all_cpus(), true);   // MMUEXT_INVLPG_ALL
    }
}

} // namespace

int mmuext_one(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op) { return one_op(hv, v, op); }

HcResult do_mmuext_op(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    struct Ops {
        Hypervisor& hv;
        Vcpu& v;
        int operator()(const mmuext_op_t& op, uint32_t&) { return one_op(hv, v, op); }
        void finish() {}
    } ops{hv, v};
    // mmuext_op takes a foreign domain too; pvmmu's operations act on the caller.
    MapContext ctx;
    const long rc = resolve_foreign(hv, *v.domain, f.arg[3], ctx);
    if (uint32_t(f.arg[1]) == 1) return run_one<mmuext_op_t>(hv, v, f, rc, ops);
    return run_batch<mmuext_op_t>(hv, v, f, rc, ops);
}

} // namespace pvmmu
