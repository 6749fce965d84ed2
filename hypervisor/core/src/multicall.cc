// HYPERVISOR_multicall (hypercall 13): run a list of hypercalls, storing each
// one's result in its entry. Entries do not stop the list when they fail (Xen).
// A multicall inside a multicall is refused (-EINVAL in that entry's result).
// When an entry is preempted, its rewritten arguments are stored back into the
// guest's entry and the multicall itself continues from that entry. Every
// hypercall reaches an entry as it reaches a direct call (core/hypercall.h:
// the core's table, then the platform's); one that replaced the guest's
// registers (iret) ends the list, its result the multicall's (Xen's mc_exit).
#include <pvmmu/abi.h>

#include "core/hypercall.h"
#include "core/mmu_update_count.h"

namespace pvmmu {

// Entries run before the multicall itself yields (each is bounded on its own).
// It yields sooner once its domain has validated or devalidated a budget's
// worth of page-table entries during the round (Domain::table_work): 64 one-op
// pins of big trees are not 64 units of work.
static constexpr uint64_t kEntriesPerRound = 64;

namespace {

// An entry replaced the guest's registers (iret): the list ends at it, its
// result the multicall's, which lands in the guest's RAX. Its entry gets the
// result too, best effort (as Xen: a failed write is no -EFAULT, the
// registers are the frame's either way).
HcResult ended(Platform& plat, Vcpu& v, Vaddr at, long rc)
{
    const uint64_t result = uint64_t(rc);
    (void)plat.copy_to_guest(v, Vaddr{at.v + offsetof(multicall_entry_t, result)}, &result, sizeof(result));
    return done(rc);
}

} // namespace

HcResult do_multicall(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    if (!v.domain->policy.allows(Perm::Multicall)) return done(-XEN_EPERM);
    const uint64_t list = f.arg[0];
    const uint32_t nr = uint32_t(f.arg[1]);
    Platform& plat = hv.platform();
    const Domain& self = *v.domain;
    const uint64_t table_work = self.table_work();

    for (uint32_t i = 0; i < nr; ++i) {
        if (i == kEntriesPerRound || (i > 0 && self.table_work() - table_work >= hv.config().preempt_budget)) {
            f.arg[0] = list + i * sizeof(multicall_entry_t);
            f.arg[1] = nr - i;
            return preempted();
        }
        const Vaddr at{list + i * sizeof(multicall_entry_t)};
        multicall_entry_t e;
        if (plat.copy_from_guest(v, &e, at, sizeof(e))) return done(-XEN_EFAULT);

        long result;
        if (e.op == __HYPERVISOR_multicall) {
            result = -XEN_EINVAL;
        } else {
            HypercallFrame inner{e.op, {e.args[0], e.args[1], e.args[2], e.args[3], e.args[4], e.args[5]}};
            if (e.op == __HYPERVISOR_mmu_update) count_mmu_update(v.calls, e.args[1]);
            const HcResult r = hypercall(hv, v, inner);
            if (r.end != HcEnd::Done) [[unlikely]] {
                if (r.end == HcEnd::EndsMulticall) return ended(plat, v, at, r.rc);
                for (unsigned k = 0; k < 6; ++k) e.args[k] = inner.arg[k];
                if (plat.copy_to_guest(v, at, &e, sizeof(e))) return done(-XEN_EFAULT);
                f.arg[0] = at.v;
                f.arg[1] = nr - i;
                return preempted();
            }
            result = r.rc;
        }
        e.result = uint64_t(result);
        count(v.calls.multicall_entries);
        if (plat.copy_to_guest(v, Vaddr{at.v + offsetof(multicall_entry_t, result)}, &e.result,
                               sizeof(e.result)))
            return done(-XEN_EFAULT);
    }
    return done(0);
}

} // namespace pvmmu
