// The grant tables' part of the invariant checker (core/invariants.h),
// kept beside it in the core's sources.
#pragma once

#include "core/invariants.h"
#include "core/pte.h"

namespace pvmmu {

// Whether a live grant mapping of domain `self` is entry i of L1 table t and
// maps what e maps, writable only if the mapping is: a foreign frame in a
// table without the MapForeign privilege is then the grant's, not a breach.
bool grant_explains_entry(const Hypervisor& hv, DomId self, Mfn t, uint32_t i, Pte e);

// Every grant table: its frames' references (tallied), every maptrack entry
// against the granter's active entry, every active entry's pins against the
// mappings that hold them, and the granter's GTF_reading / GTF_writing.
void check_grants(Hypervisor& hv, FrameTally* tally, InvariantReport& r);

} // namespace pvmmu
