// What a race point (core/race_point.h) is in the core's own sources. Only
// pvmmu_core_races, the core that the race-replaying tests link, defines
// PVMMU_RACE_POINTS; in every other build of the core (the bare-metal image,
// the simulator, the benchmarks) a race point is no code at all. Even an
// unset hook is not free: a call that may happen keeps a compare-exchange
// loop's values out of the caller-saved registers (put_page_type's last
// drop: 10 instructions per PTE lowered, docs/results.md §1).
//
// Included by core sources only, so every translation unit that sees one
// definition of race_point() belongs to the same core library.
#pragma once

#include "core/hypervisor.h"

namespace pvmmu {

#if defined(PVMMU_RACE_POINTS)
inline constexpr bool kRacePoints = true;
inline void race_point(Hypervisor& hv, RacePoint p, Mfn m) { hv.run_race_hook(p, m); }
#else
inline constexpr bool kRacePoints = false;
inline void race_point(Hypervisor&, RacePoint, Mfn) {}
#endif

} // namespace pvmmu
