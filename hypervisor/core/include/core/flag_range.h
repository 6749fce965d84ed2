// MMU_FLAG_RANGE_UPDATE on one L1 page table (docs/design.md §3).
#pragma once

#include "core/pagetable.h"

namespace pvmmu {

// Applies a FLAG_RANGE val (MBZ bits already checked, count >= 1) to entries
// [first, first + count) of the locked, referenced L1 table `t`; `ctx` as for
// mod_entry (an RW raise checks each frame's owner against it).
[[nodiscard]] int flag_range_update(Hypervisor& hv, uint64_t* t, unsigned first,
                                    const abi::FlagRange& fr, const MapContext& ctx);

} // namespace pvmmu
