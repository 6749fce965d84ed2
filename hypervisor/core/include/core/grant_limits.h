// The grant-table limits a domain may be built with (xl.cfg's
// max_grant_frames and max_maptrack_frames; docs/abi.md §10 "Grant tables"):
// at most Xen 4.17's defaults, which Xen's own boot options
// (gnttab_max_frames, gnttab_max_maptrack_frames) cap them to unless raised;
// a grant table has at least one frame, a maptrack may have none. Only the
// decision: the platform reads the words and takes the storage (arch
// boot/main.cc, pv/grants.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/grant_table.h"

namespace pvmmu {

inline constexpr uint32_t kMinGrantFrames = 1;
inline constexpr uint32_t kMaxGrantFrames = gnt::kDefaultMaxFrames;
inline constexpr uint32_t kMaxMaptrackFrames = gnt::kDefaultMaxMaptrackFrames;

// The words as the platform reads them, before they are cut to 32 bits.
constexpr bool grant_frames_ok(uint64_t n) { return n >= kMinGrantFrames && n <= kMaxGrantFrames; }
constexpr bool maptrack_frames_ok(uint64_t n) { return n <= kMaxMaptrackFrames; }

// A table with limits outside these: -EINVAL, nothing taken.
constexpr long grant_limits_check(const GrantLimits& l)
{
    return grant_frames_ok(l.max_grant_frames) && maptrack_frames_ok(l.max_maptrack_frames) ? 0 : -XEN_EINVAL;
}
static_assert(grant_limits_check(GrantLimits{}) == 0);   // the defaults are within them

} // namespace pvmmu
