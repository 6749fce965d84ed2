// A bare-metal domain's events and time (event_channel.cc): the core's
// DomainEvents over its shared_info, and the calls the other hypercall
// families hand to it (docs/architecture.md §9).
#pragma once

#include <stdint.h>

#include "pv/domain.h"

namespace pvmmu::x86 {

// At load, once shared_info is the domain's: every vcpu_info's upcall
// masked, the domain's DomainEvents built in place, and the console ring's
// port (kConsolePort) bound to the platform. 0, or -ENOSPC if the port is
// not the one start_info names.
int guest_events_init(GuestDomain& g);

// On the way back to the guest from every hypercall (pv/hypercall.cc):
// fires v's timers that are due (VIRQ_TIMER, poll timeouts) into its
// vcpu_info. Timers fire only here until the LAPIC timer is armed.
void events_on_return(Vcpu& v);

// VCPUOP_{set,stop}_{periodic,singleshot}_timer of vCPU t by v (vcpu_op.cc).
long event_vcpu_timer_op(Vcpu& v, Vcpu& t, unsigned cmd, uint64_t arg);

// SCHEDOP_yield, SCHEDOP_block and SCHEDOP_poll (sched.cc).
long event_sched_op(Vcpu& v, unsigned cmd, uint64_t arg);

} // namespace pvmmu::x86
