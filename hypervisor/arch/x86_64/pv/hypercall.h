// The hypercalls the bare-metal hypervisor adds to the core's, one family per
// file of this folder, for the one table that dispatches them (hypercall.cc,
// BareMetal::arch_hypercall; the list of numbers is surface.h's). The
// arguments are the call's (a direct call's registers or a multicall entry's
// words); the ones that may be continued, or that replace the guest's
// registers (iret), give an HcResult.
#pragma once

#include "core/hypercall_frame.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

HcResult do_set_trap_table(Vcpu& v, HypercallFrame& f);    // traps.cc
HcResult do_iret(Vcpu& v, HypercallFrame& f);              // traps.cc: reads and replaces guest_regs()
long do_set_callbacks(Vcpu& v, HypercallFrame& f);         // traps.cc
long do_callback_op(Vcpu& v, HypercallFrame& f);           // traps.cc
long do_stack_switch(Vcpu& v, HypercallFrame& f);          // traps.cc
long do_vcpu_op(Vcpu& v, HypercallFrame& f);               // vcpu_op.cc
long do_set_gdt(Vcpu& v, HypercallFrame& f);               // descriptors.cc
long do_update_descriptor(Vcpu& v, HypercallFrame& f);     // descriptors.cc
HcResult do_console_io(Vcpu& v, HypercallFrame& f);        // console.cc
long do_event_channel_op(Vcpu& v, HypercallFrame& f);      // event_channel.cc
long do_set_timer_op(Vcpu& v, HypercallFrame& f);          // event_channel.cc
long do_sched_op(Vcpu& v, HypercallFrame& f);              // sched.cc
long do_pvmmu_op(Vcpu& v, HypercallFrame& f);              // pvmmu_op.cc
long do_memory_op(Vcpu& v, HypercallFrame& f);             // memory.cc
long do_fpu_taskswitch(Vcpu& v, HypercallFrame& f);        // fpu.cc
long do_vm_assist(Vcpu& v, HypercallFrame& f);             // vm_assist.cc
long do_set_segment_base(Vcpu& v, HypercallFrame& f);      // segment_base.cc
long do_set_debugreg(Vcpu& v, HypercallFrame& f);          // debugreg.cc
long do_get_debugreg(Vcpu& v, HypercallFrame& f);          // debugreg.cc
long do_physdev_op(Vcpu& v, HypercallFrame& f);            // physdev.cc

} // namespace pvmmu::x86
