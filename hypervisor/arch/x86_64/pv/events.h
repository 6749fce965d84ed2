// A bare-metal domain's events and time (event_channel.cc): the core's
// DomainEvents over its shared_info, and the calls the other hypercall
// families hand to it (docs/architecture.md §9).
#pragma once

#include <stdint.h>

#include "core/events.h"
#include "cpu/percpu.h"
#include "cpu/traps.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// At load, once shared_info is the domain's: every vcpu_info's upcall
// masked, the domain's DomainEvents built in place, and the console ring's
// port (kConsolePort) bound to the platform. 0, or -ENOSPC if the port is
// not the one start_info names.
int guest_events_init(GuestDomain& g);

// The return-to-guest check (pv/event_delivery.cc), with interrupts off,
// on every way back to the running vCPU's guest: after a hypercall, an
// exception handled or bounced, an interrupt (cpu/traps.cc trap_dispatch),
// and any other path that returns to the guest with frame f. Fires its due
// timers (VIRQ_TIMER, a poll's timeout), bounces a pending, unmasked upcall
// to the event callback (pv/traps.h guest_upcall) and arms this CPU's LAPIC
// timer for its next deadline.
void guest_return_events(TrapFrame& f);

// Whether the next return to the guest on this CPU makes the check above
// (cpu/traps.cc trap_dispatch). It can change nothing but after what may
// have raised an event for the vCPU, made one due or unmasked one, or moved
// a deadline: a hypercall but the page-table ones (pv/hypercall.cc
// leaves_events), an interrupt (a kick from the CPU that raised an event for
// it or shut its domain down, its timer), an exception other than the page
// fault. A page fault, emulated (pv/ptwr.cc) or bounced, and those
// hypercalls touch no event, timer or mask, and an interrupt taken while
// they run marks the check due itself; so nothing Xen would deliver on that return is missed
// but what the guest unmasks by its own write to its vcpu_info and does not
// then look for (a PV kernel must: <xen/xen.h> "evtchn_upcall_mask"), which
// comes at the next hypercall or interrupt. due() marks it; taken() says
// whether it was marked and clears the mark. Inline: a few instructions, on
// every entry.
extern bool g_return_quiet[kMaxCpus];   // by CPU id: nothing marked since the last check
inline void guest_return_check_due() { g_return_quiet[this_cpu_id()] = false; }
inline bool guest_return_check_taken()
{
    bool& quiet = g_return_quiet[this_cpu_id()];
    const bool due = !quiet;
    quiet = true;
    return due;
}

// Arms this CPU's timer for v's next deadline: a vCPU's first entry
// (pv/run.cc), which is not a return.
void guest_arm_timer(const Vcpu& v);

// The vCPUs in k (of self's domain) that run on other CPUs interrupted by
// kVectorKick: each makes the return-to-guest check, or ends its halt.
void event_kick(const Vcpu& self, Kicks k);

// The vCPUs in k of domain `dom` (EventOut::remote_kicks: an interdomain
// send woke them or gave them an upcall) interrupted by kVectorKick, each
// on its own CPU: one blocked in SCHEDOP_block ends its halt.
void event_kick_remote(DomId dom, Kicks k);

// SCHEDOP_block or SCHEDOP_poll left v blocked (EventOut::block): halts
// this CPU, interrupts on, until an event, a kick, or v's timer wakes it
// (vcpu_blocked(v) false) or its domain has shut down. No busy wait.
void block_wait(Vcpu& v);

// VCPUOP_{set,stop}_{periodic,singleshot}_timer of vCPU t by v (vcpu_op.cc).
long event_vcpu_timer_op(Vcpu& v, Vcpu& t, unsigned cmd, uint64_t arg);

// SCHEDOP_yield, SCHEDOP_block and SCHEDOP_poll (sched.cc).
long event_sched_op(Vcpu& v, unsigned cmd, uint64_t arg);

} // namespace pvmmu::x86
