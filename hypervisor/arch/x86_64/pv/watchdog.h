// A domain's watchdog timers (watchdog.cc): SCHEDOP_watchdog and their expiry.
#pragma once

#include <stdint.h>

#include "pv/domain.h"

namespace pvmmu::x86 {

// SCHEDOP_watchdog(id, timeout in seconds) for v's domain: the new timer's
// id (1 or 2) for id 0, else 0; or -EINVAL, -ENOSPC as Xen.
long watchdog_op(Vcpu& v, uint32_t id, uint32_t timeout);

// On v's way back to the guest, at system time `now`: a watchdog timer of
// its domain that has expired shuts the domain down (SHUTDOWN_watchdog);
// does not return then.
// The id (1 or 2) of a timer of v's domain expired by `now`, else 0.
unsigned watchdog_expired(Vcpu& v, uint64_t now);

void watchdog_on_return(Vcpu& v, uint64_t now);

} // namespace pvmmu::x86
