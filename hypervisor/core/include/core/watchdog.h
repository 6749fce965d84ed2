// A domain's watchdog timers (SCHEDOP_watchdog, <xen/sched.h>) as Xen 4.17
// answers them (docs/abi.md §10 "Shutdown"): two deadlines in system time (ns). id 0
// takes a free timer, armed `timeout` seconds from now, and answers its id
// (1 or 2), -ENOSPC when both are in use; id 1 or 2 re-arms that one, or with
// timeout 0 frees it; -EINVAL for an id above 2 or one not in use.
//
// Only the state: the platform orders the calls (a lock per domain), reads
// the clock, arms its timer for next() and shuts the domain down with
// SHUTDOWN_watchdog when expired() names a timer (arch pv/watchdog.cc).
#pragma once

#include <stdint.h>

namespace pvmmu {

struct WatchdogTimers {
    static constexpr unsigned kCount = 2;   // Xen's NR_DOMAIN_WATCHDOG_TIMERS
    static constexpr uint64_t kFree = ~0ull;   // a deadline no timer has
    uint64_t deadline[kCount] = {kFree, kFree};

    // SCHEDOP_watchdog(id, timeout_s) at system time `now`: the new timer's
    // id for id 0, else 0; or -XEN_EINVAL, -XEN_ENOSPC. Nothing changes on an error.
    long set(uint32_t id, uint32_t timeout_s, uint64_t now);
    // The id (1 or 2) of a timer expired by `now`, else 0.
    unsigned expired(uint64_t now) const;
    // The earliest deadline; kFree when no timer is armed.
    uint64_t next() const;
};

} // namespace pvmmu
