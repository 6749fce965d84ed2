// sched_op (<xen/sched.h>): what a vCPU that owns its CPU can ask of the
// scheduler, answered as Xen 4.17 answers an unprivileged domain
// (docs/abi.md §10 "Shutdown"). The shutdown reasons taken are the core's
// (core/sched_args.h).
#include <pvmmu/abi.h>

#include "core/sched_args.h"
#include "mm/core_glue.h"
#include "pv/events.h"
#include "pv/hypercall.h"
#include "pv/run.h"
#include "pv/surface.h"
#include "pv/watchdog.h"

namespace pvmmu::x86 {

// sched_op(cmd, arg): SCHEDOP_yield, SCHEDOP_block and SCHEDOP_poll are the
// core's (pv/events.h; a vCPU has its CPU to itself: a yield has nothing to
// yield to), the rest the platform's.
long do_sched_op(Vcpu& v, HypercallFrame& f)
{
    const uint32_t cmd = uint32_t(f.arg[0]);   // an int in Xen's prototype
    if (!arch_subop_known(__HYPERVISOR_sched_op, cmd)) return -XEN_ENOSYS;
    Platform& p = core()->platform();
    const Vaddr arg{f.arg[1]};
    switch (cmd) {
    case SCHEDOP_yield:
    case SCHEDOP_block:
    case SCHEDOP_poll:
        return event_sched_op(v, cmd, f.arg[1]);
    case SCHEDOP_shutdown: {
        sched_shutdown_t s;
        if (p.copy_from_guest(v, &s, arg, sizeof(s))) return -XEN_EFAULT;
        if (const long rc = shutdown_reason_check(s.reason)) return rc;
        guest_shutdown(s.reason);   // or the reason SCHEDOP_shutdown_code gave
    }
    case SCHEDOP_shutdown_code: {
        // The reason the domain's shutdown will report, whichever way it
        // comes (its own SCHEDOP_shutdown, a crash, its watchdog); the
        // first one given stays, as on Xen.
        sched_shutdown_t s;
        if (p.copy_from_guest(v, &s, arg, sizeof(s))) return -XEN_EFAULT;
        if (const long rc = shutdown_reason_check(s.reason)) return rc;
        int none = -1;
        guest_domain(v).shutdown_code.compare_exchange_strong(none, int(s.reason), std::memory_order_acq_rel);
        return 0;
    }
    case SCHEDOP_remote_shutdown: {
        // Only a privileged domain, or the device model of the target, may
        // (Xen's XSM_DM_PRIV), and pvmmu has neither. An id that names no
        // domain (DOMID_SELF among them: Xen looks the id up as it is) is
        // -ESRCH first; any other is -EPERM.
        sched_remote_shutdown_t s;
        if (p.copy_from_guest(v, &s, arg, sizeof(s))) return -XEN_EFAULT;
        return core()->domain(s.domain_id) ? -XEN_EPERM : -XEN_ESRCH;
    }
    case SCHEDOP_watchdog: {
        sched_watchdog_t w;
        if (p.copy_from_guest(v, &w, arg, sizeof(w))) return -XEN_EFAULT;
        return watchdog_op(v, w.id, w.timeout);
    }
    case SCHEDOP_pin_override:
        // The hardware domain's only, refused before its argument is read.
        return -XEN_EPERM;
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
