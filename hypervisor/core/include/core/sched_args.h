// The argument rules of sched_op's platform sub-ops (<xen/sched.h>), as Xen
// 4.17 answers an unprivileged domain (docs/abi.md §10 "Shutdown"). Only the
// decisions: the platform copies the arguments, ends the domain and keeps
// its shutdown code, the first reason given (arch pv/sched.cc).
// SCHEDOP_yield, SCHEDOP_block and SCHEDOP_poll are the core's whole
// (core/event_ops.h), SCHEDOP_watchdog's timers core/watchdog.h.
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// SCHEDOP_shutdown's and SCHEDOP_shutdown_code's reason: Xen takes any (a
// u8); pvmmu takes those it knows how to end a domain with, SHUTDOWN_poweroff
// to SHUTDOWN_MAX, and refuses the others with -EINVAL (docs/abi.md §10).
constexpr long shutdown_reason_check(unsigned reason) { return reason <= SHUTDOWN_MAX ? 0 : -XEN_EINVAL; }

} // namespace pvmmu
