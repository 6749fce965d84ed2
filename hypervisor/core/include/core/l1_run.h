// The fused path of mmu_update for a run of cmd-0 / cmd-2 requests on one L1
// table (docs/design.md §4 "Cost": the mprotect hot path). It does what pt_update would do
// for each request, without the per-request lookup, dispatch and policy check.
#pragma once

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "core/request_reader.h"

namespace pvmmu {

// Requests i .. end - 1 from `in`, all with command `cmd` (0, 2 or 3, its policy
// already checked) on the L1 `l1` that the caller holds referenced and locked;
// `ctx` as for mod_entry (an RW raise checks the frame's owner against it).
// Does flag-only and same-frame RW changes; stops with the request untouched at
// anything else (another command or page, a new frame, a P change, a disallowed
// flag), which the caller hands to pt_update. `did`: requests completed; the
// return value is 0 or the errno of the request that failed, as pt_update's.
template <bool FoldAd>
[[nodiscard]] int l1_run(Hypervisor& hv, RequestReader<mmu_update_t>& in, Mfn l1, unsigned cmd,
                         const MapContext& ctx, uint32_t i, uint32_t end, uint32_t& did);

} // namespace pvmmu
