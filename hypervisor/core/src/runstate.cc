// A vCPU's runstate record's arithmetic (core/runstate.h).
#include "core/runstate.h"

namespace pvmmu {

vcpu_runstate_info runstate_up_to_now(const vcpu_runstate_info& r, uint64_t now)
{
    vcpu_runstate_info out = r;
    if (now > r.state_entry_time && unsigned(r.state) <= RUNSTATE_offline)
        out.time[r.state] += now - r.state_entry_time;
    return out;
}

vcpu_runstate_info runstate_enter(const vcpu_runstate_info& r, int state, uint64_t now)
{
    vcpu_runstate_info out = runstate_up_to_now(r, now);
    out.state = state;
    out.state_entry_time = now;
    return out;
}

} // namespace pvmmu
