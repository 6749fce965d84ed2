// Race points: named instants inside the core's lock-free protocols where a
// test may run code of its own, as another CPU would at that instant, so that
// one chosen interleaving replays deterministically on one thread
// (tests/core/refs_test.cc, teardown_test.cc; docs/security.md §7), or a
// real-thread test widens a window (tests/concurrency). The points exist only
// in the core those tests link (pvmmu_core_races, src/race_site.h); in the
// core as shipped they are no code at all.
#pragma once

#include "core/types.h"

namespace pvmmu {

enum class RacePoint : uint8_t {
    // get_page: the general count is raised, the owner not yet read again.
    GetPageCounted,
    // put_page_type: the last type reference was read (count 1) and is about
    // to be dropped by compare-exchange.
    LastTypeDrop,
    // relinquish_domain: between the two steps that give a frame back (its
    // owner and its reference counts, in whichever order the code uses).
    TeardownGiveBack,
    // emulate_l1_write (core/pt_write.h): the entry was read and the guest's
    // write computed from it, not yet installed (`m`: the L1).
    PtWriteComputed,
};

// Runs at every race point while installed (Hypervisor::set_race_hook); `m` is
// the frame concerned.
using RaceHook = void (*)(void* ctx, RacePoint p, Mfn m);

// Whether the core this program links has its race points: a test that
// installs a hook checks it first, or its hook would silently never run.
bool race_points_compiled();

} // namespace pvmmu
