// Which hypercalls and sub-ops the bare-metal hypervisor adds to the core's,
// as data the host's unit tests can read (docs/abi.md §12, the ABI surface
// table; tests/abi/abi_table_test.cc compares the two). The dispatcher is
// bound to it: pv/hypercall.cc static_asserts that its table holds
// exactly kArchHypercalls, and each handler with sub-ops answers -ENOSYS
// through arch_subop_known before it looks at anything else but what Xen
// checks first. Header only, no hardware: it is compiled for the host.
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>
#include <xen/physdev.h>

namespace pvmmu::x86 {

// The numbers of pv/hypercall.cc's table, in its order.
inline constexpr unsigned kArchHypercalls[] = {
    __HYPERVISOR_set_trap_table, __HYPERVISOR_set_gdt,      __HYPERVISOR_set_timer_op,
    __HYPERVISOR_update_descriptor,
    __HYPERVISOR_stack_switch,
    __HYPERVISOR_fpu_taskswitch, __HYPERVISOR_vm_assist,    __HYPERVISOR_set_callbacks,
    __HYPERVISOR_console_io,     __HYPERVISOR_iret,         __HYPERVISOR_sched_op,
    __HYPERVISOR_callback_op,    __HYPERVISOR_vcpu_op,      __HYPERVISOR_event_channel_op,
    __HYPERVISOR_memory_op,      __HYPERVISOR_pvmmu_op,     __HYPERVISOR_set_debugreg,
    __HYPERVISOR_get_debugreg,   __HYPERVISOR_physdev_op,
    __HYPERVISOR_set_segment_base,
};

// memory_op's command word: the sub-op in the low 6 bits, above them the
// extent a continued sub-op restarts from (MEMOP_EXTENT_SHIFT in Xen's own
// headers, not the public ones).
inline constexpr unsigned kMemopExtentShift = 6;
inline constexpr uint64_t kMemopCmdMask = (1u << kMemopExtentShift) - 1;

constexpr bool is_arch_hypercall(uint64_t op)
{
    for (unsigned h : kArchHypercalls)
        if (h == op) return true;
    return false;
}

// Whether hypercall `op`'s handler takes sub-op `cmd` (its first argument);
// any other is -ENOSYS. A hypercall without sub-ops takes any. vm_assist's
// command comes after its type check (vm_assist_result, core/vm_assist_rules.h).
constexpr bool arch_subop_known(unsigned op, uint64_t cmd)
{
    switch (op) {
    case __HYPERVISOR_console_io: return cmd == CONSOLEIO_write;
    case __HYPERVISOR_sched_op: return cmd <= SCHEDOP_pin_override;   // every one Xen 4.17 has
    case __HYPERVISOR_callback_op: return cmd == CALLBACKOP_register || cmd == CALLBACKOP_unregister;
    case __HYPERVISOR_vcpu_op:   // initialise … register_vcpu_info: all but send_nmi and later ones
        return cmd <= VCPUOP_register_vcpu_info;
    case __HYPERVISOR_event_channel_op:   // the core's, both ABIs (core/event_ops.h): all but pirq
        return cmd <= EVTCHNOP_set_priority && cmd != EVTCHNOP_bind_pirq;
    case __HYPERVISOR_pvmmu_op: return cmd <= PVMMUOP_vcpu_calls;
    case __HYPERVISOR_memory_op: {
        const uint64_t sub = cmd & kMemopCmdMask;
        return sub == XENMEM_maximum_ram_page || sub == XENMEM_current_reservation ||
               sub == XENMEM_maximum_reservation || sub == XENMEM_machphys_mapping || sub == XENMEM_maximum_gpfn;
    }
    case __HYPERVISOR_physdev_op: return cmd == PHYSDEVOP_set_iopl;
    default: return true;
    }
}

} // namespace pvmmu::x86
