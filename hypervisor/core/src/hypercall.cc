// Hypercall dispatch table (STYLE 2: a table, the default is -ENOSYS).
#include "core/hypercall.h"

#include <pvmmu/abi.h>

namespace pvmmu {

using Handler = HcResult (*)(Hypervisor&, Vcpu&, HypercallFrame&);

struct HandlerTable {
    Handler h[64] = {};
    constexpr HandlerTable()
    {
        h[__HYPERVISOR_mmu_update] = do_mmu_update;
        h[__HYPERVISOR_multicall] = do_multicall;
        h[__HYPERVISOR_update_va_mapping] = do_update_va_mapping;
        h[__HYPERVISOR_xen_version] = do_xen_version;
        h[__HYPERVISOR_mmuext_op] = do_mmuext_op;
    }
};
static constexpr HandlerTable kHandlers;

HcResult hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& frame)
{
    if (frame.op >= sizeof(kHandlers.h) / sizeof(kHandlers.h[0]) || !kHandlers.h[frame.op])
        return done(-XEN_ENOSYS);
    return kHandlers.h[frame.op](hv, v, frame);
}

long hypercall_to_completion(Hypervisor& hv, Vcpu& v, HypercallFrame frame, unsigned* continuations)
{
    unsigned n = 0;
    for (;;) {
        const HcResult r = hypercall(hv, v, frame);
        if (!r.preempted) {
            if (continuations) *continuations = n;
            return r.rc;
        }
        ++n;
        hv.platform().relax();
    }
}

} // namespace pvmmu
