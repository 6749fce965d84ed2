// sched_op (<xen/sched.h>): what a vCPU that owns its CPU can ask of the
// scheduler.
#include <pvmmu/abi.h>

#include "mm/core_glue.h"
#include "pv/events.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

// sched_op(cmd, arg): SCHEDOP_yield, SCHEDOP_block and SCHEDOP_poll are the
// core's (pv/events.h; a vCPU has its CPU to itself: a yield has nothing to
// yield to), SCHEDOP_shutdown with a sched_shutdown_t is the platform's.
long do_sched_op(Vcpu& v, HypercallFrame& f)
{
    const uint32_t cmd = uint32_t(f.arg[0]);   // an int in Xen's prototype
    if (!arch_subop_known(__HYPERVISOR_sched_op, cmd)) return -XEN_ENOSYS;
    switch (cmd) {
    case SCHEDOP_yield:
    case SCHEDOP_block:
    case SCHEDOP_poll:
        return event_sched_op(v, cmd, f.arg[1]);
    case SCHEDOP_shutdown: {
        sched_shutdown_t s;
        if (core()->platform().copy_from_guest(v, &s, Vaddr{f.arg[1]}, sizeof(s))) return -XEN_EFAULT;
        if (s.reason > SHUTDOWN_MAX) return -XEN_EINVAL;
        guest_shutdown(s.reason);
    }
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
