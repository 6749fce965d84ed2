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
// on the way back to the running vCPU's guest (cpu/traps.cc trap_dispatch),
// in two parts, `what`: kCheckTimers fires its due timers (VIRQ_TIMER, a
// poll's timeout, the watchdog) and arms this CPU's LAPIC timer for its next
// deadline; kCheckUpcall bounces a pending, unmasked upcall to the event
// callback (pv/traps.h guest_upcall), after the timers.
inline constexpr uint8_t kCheckUpcall = 1, kCheckTimers = 2, kCheckAll = kCheckUpcall | kCheckTimers;
void guest_return_events(TrapFrame& f, uint8_t what);

// Which parts the next return to the guest on this CPU makes. Each can
// change nothing but after what may have raised an event for the vCPU, made
// one due or unmasked one (the upcall), or moved a deadline or reached one
// (the timers): every part after an interrupt (a kick from the CPU that
// raised an event for the vCPU, shut its domain down, set this vCPU's timer
// (pv/event_channel.cc event_vcpu_timer_op) or moved the domain's watchdog
// earlier (pv/watchdog.cc); this CPU's timer), an exception other than the
// page fault, a user-mode SYSCALL, a hypercall but those below; the
// upcall alone after an iret that unmasks an upcall it finds pending (it
// moves no deadline; one raised after its look comes with a kick); neither
// after a page fault, emulated (pv/ptwr.cc) or bounced, and the page-table
// hypercalls (pv/hypercall.cc leaves_events), which touch no event, timer or
// mask: an interrupt taken while they run marks its parts itself. So
// nothing Xen would deliver on that return is missed but what the guest
// unmasks by its own write to its vcpu_info and does not then look for (a
// PV kernel must: <xen/xen.h> "evtchn_upcall_mask"), which comes at its
// next hypercall, interrupt, exception other than the page fault, or
// user-mode SYSCALL. due() marks parts; taken() gives the marked
// ones and clears them. Inline: a few instructions, on every entry.
// Both work on this CPU's byte (PerCpu::return_clear, through %gs), which
// no other CPU touches. due() runs with interrupts on (a hypercall's,
// pv/hypercall.cc syscall_trap) and in the interrupt handlers that nest in
// it: it is one read-modify-write instruction (AND to memory), which no
// interrupt on this CPU can split, so no marking is lost between another's
// read and write (no LOCK needed). taken() runs with interrupts off, so
// nothing on this CPU comes between its load and its store, and stores
// only when a part was marked. Both are volatile asm, kept in program order
// with each other and with the STI and CLI around a hypercall.
inline void guest_return_check_due(uint8_t what = kCheckAll)
{
    asm volatile("andb %1, %%gs:%c0" : : "i"(__builtin_offsetof(PerCpu, return_clear)), "iq"(uint8_t(~what)));
}
inline uint8_t guest_return_check_taken()
{
    uint8_t clear;
    asm volatile("movb %%gs:%c1, %0" : "=q"(clear) : "i"(__builtin_offsetof(PerCpu, return_clear)));
    if (clear == kCheckAll) [[likely]] return 0;
    asm volatile("movb %1, %%gs:%c0" : : "i"(__builtin_offsetof(PerCpu, return_clear)), "i"(kCheckAll));
    return uint8_t(~clear & kCheckAll);
}

// Every return to the guest in ring 3 (cpu/traps.cc trap_dispatch,
// pv/hypercall.cc syscall_trap): a load and a compare of the mark, and the
// RIP's test, when nothing is due; the rest out of line
// (guest_exit_checks).
void guest_exit_checks(TrapFrame& f, uint8_t check);
inline void guest_exit(TrapFrame& f)
{
    const uint8_t check = guest_return_check_taken();
    if (check || !canonical(Vaddr{f.rip})) [[unlikely]] guest_exit_checks(f, check);
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
