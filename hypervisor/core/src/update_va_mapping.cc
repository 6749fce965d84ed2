// HYPERVISOR_update_va_mapping (hypercall 14): replace the L1 entry that maps `va`
// in the calling vCPU's address space, then flush as the UVMF flags say. The
// install has Xen's normal (cmd 0) semantics.
//
// The walk down to the L1 takes no lock and no reference (docs/design.md §4): every value
// read on the way is checked before it is used, and the L1 it ends on is taken
// with a type reference that only a validated L1 of this domain grants. A table
// unlinked and reused meanwhile can at worst lead to another of the domain's own
// validated L1s — which the guest may update anyway.
//
// The walk is the guest's view of its own tables, not the hardware's: it never
// enters the hypervisor's L4 slots (bare metal keeps its own tables there, whose
// 2 MiB leaves name frames the guest may own and have pinned as L1s), stops at
// any PS entry (guest tables have none, but a table reused meanwhile may), and
// reads only tables the domain owns.
#include "core/guest_args.h"
#include "core/table_cursor.h"

namespace pvmmu {

Mfn walk_to_l1(Hypervisor& hv, const Vcpu& v, Vaddr va)
{
    Mfn m;
    return walk_tables<2>(hv, v, v.domain->id, va, m) ? m : Mfn{~0ull};
}

namespace {

// Which CPUs to flush, from the flags word: 0 local, UVMF_ALL, else a pointer to
// a vCPU bitmap (Xen's encoding).
int flush_targets(Hypervisor& hv, Vcpu& v, uint64_t flags, CpuMask& cpus)
{
    const uint64_t target = flags & ~uint64_t(UVMF_FLUSHTYPE_MASK);
    if (target == UVMF_LOCAL) {
        cpus = CpuMask{};
        cpus.set(v.cpu);
        return 0;
    }
    if (target == UVMF_ALL) {
        cpus = v.domain->all_cpus();
        return 0;
    }
    return read_vcpumask(hv, v, Vaddr{target}, cpus);
}

} // namespace

HcResult do_update_va_mapping(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    const Vaddr va{f.arg[0]};
    const Pte val{f.arg[1]};
    const uint64_t flags = f.arg[2];
    Domain& d = *v.domain;
    if (!d.policy.allows(Perm::UpdateVaMapping)) return done(-XEN_EPERM);
    if (!canonical(va)) return done(-XEN_EINVAL);

    // Check the flush request first: a failed call changes nothing.
    const uint64_t type = flags & UVMF_FLUSHTYPE_MASK;
    if (type == UVMF_FLUSHTYPE_MASK) return done(-XEN_EINVAL);
    CpuMask cpus;
    if (type != UVMF_NONE) {
        if (int rc = flush_targets(hv, v, flags, cpus)) return done(rc);
    }

    TableCursor cursor(hv, d.id);
    if (cursor.acquire(walk_to_l1(hv, v, va)) != 1) return done(-XEN_EINVAL);
    const int rc = mod_entry<false>(hv, Level::L1, cursor.table() + table_index(va, Level::L1), val,
                                    MapContext{d.id, d.id});
    cursor.release();
    if (rc) return done(rc);

    if (type == UVMF_TLB_FLUSH) hv.platform().flush_tlbs(cpus, FlushRequest{});
    else if (type == UVMF_INVLPG) hv.platform().flush_tlbs(cpus, FlushRequest{FlushKind::Page, va});
    return done(0);
}

} // namespace pvmmu
