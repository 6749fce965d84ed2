// Domain registry of the core, and whether this build has race points.
#include "core/hypervisor.h"

#include "race_site.h"

namespace pvmmu {

bool Hypervisor::add_domain(Domain& d)
{
    if (d.id >= kMaxDomains || domains_[d.id].load(std::memory_order_acquire)) return false;
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        d.vcpus[i].domain = &d;
        d.vcpus[i].id = i;
    }
    domains_[d.id].store(&d, std::memory_order_release);   // a CPU that finds d finds it set up
    return true;
}

bool race_points_compiled() { return kRacePoints; }

} // namespace pvmmu
