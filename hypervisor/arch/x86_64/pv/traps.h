// A PV guest's virtual IDT and callbacks (traps.cc): delivering an
// exception or event to the handler the guest registered, and the checks
// set_trap_table, set_callbacks and stack_switch share with VCPUOP_initialise.
#pragma once

#include "cpu/traps.h"
#include "core/callback_rules.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// An exception of the running vCPU (from ring 3) delivered to the handler its
// trap table names, with Xen's x86-64 PV bounce frame on the guest's stack;
// false when there is no handler or the frame cannot be written.
bool guest_bounce(TrapFrame& f);

// An event of `vector` delivered to the running vCPU's handler for it, with
// the bounce frame above, an error code in it only when `error_code`: what
// guest_bounce does for a hardware exception, and a software INT n uses
// (no error code, RIP past the instruction). False as guest_bounce.
bool guest_deliver(TrapFrame& f, unsigned vector, bool error_code);

// On a return to the guest that looks for the upcall (pv/events.h
// guest_return_check_due): the event callback if an upcall is pending and
// unmasked (pv/traps.cc).
void guest_upcall(TrapFrame& f);

// SYSCALL from the guest's user mode (VECTOR_SYSCALL): to its syscall
// callback, or #UD without one; the domain crashed when neither can be
// delivered.
void guest_user_syscall(TrapFrame& f);

// SYSCALL from compatibility mode (VECTOR_SYSCALL32): the guest's syscall32
// callback, or #UD; false when neither can be delivered.
bool guest_syscall32(TrapFrame& f);

// What set_trap_table (one entry), set_callbacks and stack_switch set
// (pv/traps.cc), once checked by core/callback_rules.h: one piece of code for
// the hypercalls and for VCPUOP_initialise, which takes the same state from a
// vcpu_guest_context (pv/vcpu_op.cc).
TrapEntry trap_entry(const trap_info_t& t);
// `masks`: the failsafe and syscall callbacks' bits of VcpuArch::callback_masks
// (set_callbacks: none, as Xen registers them without flags).
void set_callbacks(VcpuArch& a, uint64_t event, uint64_t failsafe, uint64_t syscall, uint8_t masks = 0);
uint16_t kernel_stack_selector(uint64_t ss);

} // namespace pvmmu::x86
