// A vCPU's runstate record (<xen/vcpu.h> vcpu_runstate_info): which of Xen's
// four RUNSTATE_* states it is in, since when (system time, ns), and how long
// it has spent in each. Only the record's arithmetic: the platform keeps the
// record per vCPU under a lock, reads the clock and writes the guest's
// registered area (arch pv/runstate.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// The record with the time spent in its state so far added to that state's
// total, as Xen's vcpu_runstate_get answers for a vCPU other than the
// caller. A clock behind the record's entry time, or a state that is none of
// the four, adds nothing.
vcpu_runstate_info runstate_up_to_now(const vcpu_runstate_info& r, uint64_t now);

// The record once the vCPU enters `state` at `now`: the old state's time
// counted up to now, the new state entered then.
vcpu_runstate_info runstate_enter(const vcpu_runstate_info& r, int state, uint64_t now);

} // namespace pvmmu
