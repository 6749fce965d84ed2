// The guest addresses the PV callback hypercalls take (docs/abi.md §10), each
// a guest address (core/guest_va.h), -EINVAL otherwise: a trap table entry's
// handler (set_trap_table; address 0 ends or clears an entry), the event,
// failsafe and syscall callbacks (set_callbacks, register_callback), and the
// kernel stack's SP (stack_switch: Xen does not look; pvmmu refuses one it
// could never switch to). VCPUOP_initialise checks its context by the same
// rules (core/vcpu_op_rules.h).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/guest_va.h"

namespace pvmmu {

constexpr bool trap_entry_ok(const trap_info_t& t) { return !t.address || guest_va_ok(t.address); }

constexpr bool callbacks_ok(uint64_t event, uint64_t failsafe, uint64_t syscall)
{
    return guest_va_ok(event) && guest_va_ok(failsafe) && guest_va_ok(syscall);
}

constexpr bool kernel_stack_ok(uint64_t sp) { return guest_va_ok(sp); }

} // namespace pvmmu
