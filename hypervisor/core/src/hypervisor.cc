// Domain registry of the core.
#include "core/hypervisor.h"

namespace pvmmu {

bool Hypervisor::add_domain(Domain& d)
{
    if (d.id >= kMaxDomains || domains_[d.id]) return false;
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        d.vcpus[i].domain = &d;
        d.vcpus[i].id = i;
    }
    domains_[d.id] = &d;
    return true;
}

} // namespace pvmmu
