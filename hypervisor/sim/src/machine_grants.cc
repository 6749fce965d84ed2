// The simulated machine as the platform of the core's grant tables
// (core/grant_table.h): the storage a domain's table needs, in host memory.
#include "sim/machine.h"

namespace pvmmu::sim {

GrantTable* Machine::enable_grants(Domain& d, const DomainLayout& layout, uint64_t first_gpfn, uint32_t nr_frames,
                                   uint32_t handles, GrantLimits limits)
{
    auto g = std::make_unique<Grants>();
    for (uint32_t i = 0; i < nr_frames; ++i) g->frames.push_back(layout.mfn(first_gpfn + i));
    g->active.resize(size_t(nr_frames) * gnt::kEntriesPerFrame);
    g->maptrack.resize(handles);
    g->table = std::make_unique<GrantTable>(
        d.id, limits, GrantStorage{g->frames.data(), nr_frames, g->active.data(), g->maptrack.data(), handles});
    d.grants = g->table.get();
    return grants_.emplace_back(std::move(g))->table.get();
}

} // namespace pvmmu::sim
