// TLB flush policy; see guest/tlb.h.
#include "guest/tlb.h"

#include "guest/hypercalls.h"

namespace pvmmu::guest {

int flush_tlb(Cpu& c, const FlushPlan& plan, uint64_t vcpus)
{
    if (plan.empty() || vcpus == 0) return 0;
    const bool local = vcpus == 1ull << c.id;
    Va mask{0};
    if (!local && !put_vcpumask(c, vcpus, mask)) return -XEN_EFAULT;
    unsigned n = 0;
    if (plan.whole()) {
        if (!put_mmuext(c, n++, local ? MMUEXT_TLB_FLUSH_LOCAL : MMUEXT_TLB_FLUSH_MULTI, 0, mask.v))
            return -XEN_EFAULT;
    } else {
        for (unsigned i = 0; i < plan.pages(); ++i)
            if (!put_mmuext(c, n++, local ? MMUEXT_INVLPG_LOCAL : MMUEXT_INVLPG_MULTI, plan.page(i).v, mask.v))
                return -XEN_EFAULT;
        c.stats.invlpg_pages.add(plan.pages());
    }
    if (local) ++c.stats.flush_local;
    else ++c.stats.flush_remote;
    return int(mmuext_scratch(c, n));
}

int flush_local_page(Cpu& c, Va va)
{
    ++c.stats.flush_local;
    c.stats.invlpg_pages.add(1);
    return int(mmuext_one(c, MMUEXT_INVLPG_LOCAL, va.v));
}

} // namespace pvmmu::guest
