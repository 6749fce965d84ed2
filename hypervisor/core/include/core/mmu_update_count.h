// Where an mmu_update call is counted (CallCounters, core/call_counters.h):
// where it is made, the platform's hypercall entry or a multicall's entry,
// never inside do_mmu_update, whose per-call cost docs/results.md §1
// measures on a platform that counts nothing.
#pragma once

#include <pvmmu/abi.h>

#include "core/call_counters.h"

namespace pvmmu {

// `count_arg` is the call's second argument: counted on its first round only
// (a continuation carries PVMMU_MMU_UPDATE_PREEMPTED), with every request it
// hands in.
inline void count_mmu_update(CallCounters& c, uint64_t count_arg)
{
    if (count_arg & PVMMU_MMU_UPDATE_PREEMPTED) return;
    count(c.mmu_updates);
    count(c.mmu_update_requests, uint32_t(count_arg));
}

} // namespace pvmmu
