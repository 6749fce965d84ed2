// Hypercall dispatch table: one table, no switch. A number not in it is the
// platform's (Platform::arch_hypercall), whose default is -ENOSYS.
#include "core/hypercall.h"

#include <pvmmu/abi.h>

#include "core/grant_table.h"

namespace pvmmu {

using Handler = HcResult (*)(Hypervisor&, Vcpu&, HypercallFrame&);

constexpr HypercallTable<Handler>::Entry kEntries[] = {
    {__HYPERVISOR_mmu_update, do_mmu_update},
    {__HYPERVISOR_multicall, do_multicall},
    {__HYPERVISOR_update_va_mapping, do_update_va_mapping},
    {__HYPERVISOR_xen_version, do_xen_version},
    {__HYPERVISOR_mmuext_op, do_mmuext_op},
    {__HYPERVISOR_grant_table_op, do_grant_table_op},
};
constexpr HypercallTable<Handler> kHandlers(kEntries);
// The bare-metal platform calls do_mmu_update directly for a direct call
// (hypervisor/arch/x86_64/pv/hypercall.cc): the table must agree.
static_assert(kHandlers.find(__HYPERVISOR_mmu_update) == do_mmu_update);

namespace {

// Out of line, so that the core's own numbers (the per-PTE path: mmu_update
// direct or in a multicall) pay only the table's compare for the fallback.
[[gnu::noinline]] HcResult platform_hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& frame)
{
    return hv.platform().arch_hypercall(v, frame);
}

} // namespace

HcResult hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& frame)
{
    const Handler h = kHandlers.find(frame.op);
    return h ? h(hv, v, frame) : platform_hypercall(hv, v, frame);
}

long hypercall_to_completion(Hypervisor& hv, Vcpu& v, HypercallFrame frame, unsigned* continuations)
{
    unsigned n = 0;
    for (;;) {
        const HcResult r = hypercall(hv, v, frame);
        if (!r.preempted()) {
            if (continuations) *continuations = n;
            return r.rc;
        }
        ++n;
        hv.platform().relax();
    }
}

} // namespace pvmmu
