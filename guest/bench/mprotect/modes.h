// The update modes of docs/design.md §7's mprotect benchmark, each as a configuration of
// the guest library: the best feature level it may use, its batch size, and for
// the three modes the library itself never uses (native, per-pte, unsafe) a
// range hook (MmuConfig::change_pte_range) built from the library's own parts.
#pragma once

#include "guest/guest.h"

namespace pvmmu::guest::bench {

struct Mode {
    const char* name;
    MmuLevel cap;             // MmuConfig::level_cap
    unsigned batch_ptes;      // MmuConfig::batch_ptes
    ChangePteRangeFn hook;    // MmuConfig::change_pte_range (nullptr: the library's)
    bool counts_retries;      // the guest itself runs the cmpxchg loop (native)
    bool multicall;           // MmuConfig::multicall (linux-xen)
};

// In docs/design.md §7's order: native, per-pte, linux-xen, atomic-array, flag-range, unsafe.
const Mode* find_mode(const char* name, unsigned len);
const Mode& mode_at(unsigned i);
unsigned nr_modes();

// Makes `m` the library's way of changing PTEs from now on (vCPU 0, while the
// others are idle).
void use_mode(Guest& g, const Mode& m);

// Compare-exchange retries of the native mode on vCPU `vcpu` (its cmpxchg lost
// to a hardware A/D update and went round again).
uint64_t native_retries(unsigned vcpu);

} // namespace pvmmu::guest::bench
