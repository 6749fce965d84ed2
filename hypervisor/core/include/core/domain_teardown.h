// The end of a domain (Xen's domain_relinquish_resources): once none of its
// vCPUs can run or be in a hypercall again, every reference the domain holds
// is dropped — its vCPUs' base pointers, its pins (devalidating its tables,
// which drops what their entries held), the frames the hypervisor held for it
// — and its frames become free; the domain leaves the registry.
#pragma once

#include "core/hypervisor.h"

namespace pvmmu {

struct TeardownResult {
    uint64_t freed = 0;   // frames now free
    uint64_t kept = 0;    // frames still referenced (a foreign mapping, a reference-counting
                          // bug, or a racing get_page in every pass): left owned, not reused
};

// The caller guarantees that no vCPU of d runs, walks or changes its tables
// any more, and that no CPU has d's tables loaded. Frames kept because
// other domains still pin d's grants are given back by the last unpin,
// which calls this again (core/grant_table.h grant_unpin).
TeardownResult relinquish_domain(Hypervisor& hv, Domain& d);

} // namespace pvmmu
