// A vCPU's runstate, as Xen keeps it (runstate.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// The vCPU's runstate (pv/runstate.cc): `v` enters RUNSTATE_* `state`
// now, on its own CPU with its page tables loaded (its area is written
// there); VCPUOP_register_runstate_memory_area and VCPUOP_get_runstate_info
// of vCPU t for the caller.
void runstate_change(Vcpu& v, int state);
long runstate_register(Vcpu& caller, Vcpu& t, uint64_t arg);
long runstate_get(Vcpu& caller, Vcpu& t, uint64_t arg);

} // namespace pvmmu::x86
