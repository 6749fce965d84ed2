// The event, timer and scheduling hypercalls of the core (docs/abi.md "Event
// channels", "Timers", "Blocking"), as a platform calls them: the vCPU, the
// sub-op and the guest argument in, 0 or Xen's negated errno out, plus what
// the platform must do next (EventOut). Arguments are read and results
// written through Platform::copy_from_guest / copy_to_guest, so unit tests
// and the fuzzer drive them with host memory. Time is the platform's: each
// call that needs it takes `now`, the system time in ns of vcpu_time_info.
#pragma once

#include "core/events.h"
#include "core/hypercall_frame.h"
#include "core/hypervisor.h"

namespace pvmmu {

struct EventOut {
    Kicks kicks;                 // vCPUs of the caller's domain to kick (core/events.h)
    // A send on an interdomain channel to another domain: that domain and
    // its vCPUs to kick.
    DomId remote_dom = 0;
    Kicks remote_kicks;
    uint32_t platform_port = 0;  // the guest sent on this platform-ended port (0: none)
    bool block = false;          // the caller blocked (SCHEDOP_block / poll): halt until woken
};

// HYPERVISOR_event_channel_op(cmd, arg), either ABI: the FIFO sub-ops
// (init_control, expand_array, set_priority) switch a domain to FIFO and
// serve it there (core/event_fifo.h); bind_pirq and newer ones are -ENOSYS.
long evtchn_op(Hypervisor& hv, Vcpu& v, unsigned cmd, Vaddr arg, EventOut& out);

// Domain teardown's part (core/domain_teardown.h): every port of d closed
// as EVTCHNOP_reset closes them, so the other end of each channel to
// another domain is unbound again and nothing can bind to d any more.
void evtchn_teardown(Hypervisor& hv, Domain& d);

// HYPERVISOR_set_timer_op(timeout): the caller's single-shot deadline; 0
// stops it; a past deadline fires at once; a negative one (bit 63) or one
// more than 2^50 ns ahead fires 100 ms after `now`, as Xen answers an old
// Linux's wrapped jiffies.
long set_timer_op(Hypervisor& hv, Vcpu& v, uint64_t timeout, uint64_t now);

// VCPUOP_{set,stop}_{singleshot,periodic}_timer by `caller` on its domain's
// vCPU `target` (Xen: a single-shot timer is only the caller's own, -EINVAL).
// Any other cmd: -ENOSYS.
long vcpu_timer_op(Hypervisor& hv, Vcpu& caller, Vcpu& target, unsigned cmd, Vaddr arg, uint64_t now);

// The earliest deadline of vCPU v (single-shot, periodic, poll timeout), or
// kNever: the platform arms its timer (the LAPIC's) for it after each call
// above and each timer_expire.
uint64_t next_deadline(const Vcpu& v);

// Fires v's deadlines that are due at `now`: VIRQ_TIMER on its bound port
// for the single-shot and periodic timers (the periodic one re-armed a
// period after the tick it was due), a wake-up for a poll timeout. Takes the
// domain's event lock (events.h send_virq: not from an interrupt handler
// that may have interrupted the core).
Kicks timer_expire(Hypervisor& hv, Vcpu& v, uint64_t now);

// HYPERVISOR_sched_op(cmd, arg) for SCHEDOP_yield, SCHEDOP_block and
// SCHEDOP_poll; other cmds are the platform's (-ENOSYS here). Block enables
// events (evtchn_upcall_mask = 0) and, unless an upcall is then pending,
// leaves the vCPU blocked with out.block set: the platform halts it until
// vcpu_blocked(v) is false (an event or a poll timeout clears it, and kicks
// it), then returns 0 to the guest. Poll does the same for its ports.
long sched_op(Hypervisor& hv, Vcpu& v, unsigned cmd, Vaddr arg, uint64_t now, EventOut& out);
bool vcpu_blocked(const Vcpu& v);

// A platform's dispatch of the three hypercalls above from a frame, for its
// own table (Platform::arch_hypercall); `now` from the platform's clock.
// VCPUOP numbers other than the timers, and sched_op cmds other than
// yield/block/poll, return -ENOSYS: the platform handles them first.
HcResult event_hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& f, uint64_t now, EventOut& out);

} // namespace pvmmu
