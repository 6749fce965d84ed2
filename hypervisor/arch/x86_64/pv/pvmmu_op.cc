// pvmmu_op (docs/abi.md §10 "pvmmu_op"): the facts a guest test needs that only
// the hypervisor knows, self-restriction, and (for a domain booted with the
// module word `invariant-check`) the whole-machine invariant check. Safe by
// construction: a domain reads only its own vCPUs' counters, the frames it
// was booted to name (its peer's) and one hypervisor and one device frame
// number, violation counts, and can only add denials to its own policy.
// Every sub-op checks its arguments first; an error changes nothing (the
// writes to the guest come last, and the reads change no state).
#include <pvmmu/abi.h>

#include "core/pvmmu_op_rules.h"
#include "cpu/quiesce.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/hv_invariants.h"
#include "pv/domain.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

namespace {

template <class T>
long copy_out(Vcpu& v, uint64_t va, const T& x)
{
    return core()->platform().copy_to_guest(v, Vaddr{va}, &x, sizeof(x));
}

pvmmu_vcpu_counters snapshot(const VcpuCounters& c)
{
    constexpr auto r = std::memory_order_relaxed;
    return pvmmu_vcpu_counters{c.faults.load(r), c.flush_all.load(r), c.flush_page.load(r),
                               c.shootdowns_sent.load(r), c.shootdowns_served.load(r), c.halts.load(r)};
}

pvmmu_vcpu_calls snapshot(const CallCounters& c)
{
    constexpr auto r = std::memory_order_relaxed;
    return pvmmu_vcpu_calls{c.hypercalls.load(r),  c.continuations.load(r),       c.multicalls.load(r),
                            c.multicall_entries.load(r), c.mmu_updates.load(r), c.mmu_update_requests.load(r),
                            c.pt_writes.load(r)};
}

pvmmu_facts facts(const GuestDomain& d)
{
    pvmmu_facts f{};
    f.peer_domid = DOMID_INVALID;
    if (d.peer) {
        f.peer_domid = d.peer->dom.id;
        f.peer_first_mfn = d.peer->layout.first.v;
        f.peer_nr_frames = d.peer->layout.nr_frames;
    }
    f.hypervisor_mfn = core_hypervisor_frame().v;
    f.io_mfn = core_io_frame().v;
    return f;
}

// The core's checker and the hypervisor's page-table check, with every other
// CPU out of the core (cpu/quiesce.h); violations go to the console as well.
// false: another CPU's check is running.
bool check_machine(DomId caller, pvmmu_invariants& out)
{
    out = pvmmu_invariants{};
    const bool ran = quiesced([&] {
        InvariantReport r;
        if (!core_check(r))
            for (unsigned i = 0; i < r.kept(); ++i)
                printk("core invariants (check by domain %u): VIOLATION: mfn 0x%lx: %s\n", caller, r[i].frame.v,
                       r[i].reason);
        HvMapStats s;
        (void)hv_check_invariants(s);   // prints its own violations
        out = pvmmu_invariants{r.total(), s.violations, r.frames, r.tables, r.entries};
    });
    if (out.core_violations || out.hv_violations)
        printk("invariants (check by domain %u): FAILED: %lu core, %lu hypervisor violations\n", caller,
               out.core_violations, out.hv_violations);
    return ran;
}

} // namespace

// pvmmu_op(cmd, a1, a2): arg[0..2] (RDI, RSI, RDX when called directly).
long do_pvmmu_op(Vcpu& v, HypercallFrame& f)
{
    if (!arch_subop_known(__HYPERVISOR_pvmmu_op, f.arg[0])) return -XEN_ENOSYS;
    GuestDomain& d = guest_domain(v);
    switch (f.arg[0]) {
    case PVMMUOP_deny:
        return d.dom.policy.deny_abi(f.arg[1]) ? 0 : -XEN_EINVAL;
    case PVMMUOP_vcpu_counters:
        if (long rc = pvmmu_op_vcpu_check(f.arg[1], d.dom.nr_vcpus)) return rc;
        return copy_out(v, f.arg[2], snapshot(arch(d.dom.vcpus[f.arg[1]]).counters));
    case PVMMUOP_vcpu_calls:
        if (long rc = pvmmu_op_vcpu_check(f.arg[1], d.dom.nr_vcpus)) return rc;
        return copy_out(v, f.arg[2], snapshot(d.dom.vcpus[f.arg[1]].calls));
    case PVMMUOP_install_retries:
        if (long rc = install_retries_check(guest_domains_started())) return rc;
        return copy_out(v, f.arg[1], core()->install_retries());
    case PVMMUOP_facts:
        return copy_out(v, f.arg[1], facts(d));
    case PVMMUOP_check_invariants: {
        if (long rc = check_invariants_check(d.invariant_check)) return rc;
        pvmmu_invariants r;
        if (!check_machine(d.dom.id, r)) return -XEN_EBUSY;
        if (f.arg[1] && copy_out(v, f.arg[1], r)) return -XEN_EFAULT;
        return check_invariants_result(r.core_violations + r.hv_violations);
    }
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
