// A PV guest's debug registers in the CPU and its #DB (debugreg.cc).
#pragma once

#include "cpu/traps.h"
#include "pv/domain.h"
#include "pv/dr.h"

namespace pvmmu::x86 {

// The running vCPU's debug registers (pv/debugreg.cc). DrPolicy of v: its
// CPUID and virtual CR4.DE.
DrPolicy guest_dr_policy(Vcpu& v);
// set_debugreg's work for the running vCPU: the virtual registers and, as
// they change, the CPU's. 0 or the errno of dr_write.
long guest_set_debugreg(Vcpu& v, unsigned reg, uint64_t value);
// The vCPU's breakpoints into this CPU (it starts running here), and the
// hypervisor's own (none) back when it leaves (cpu_leave_vcpu).
void guest_debug_load(Vcpu& v);
void guest_debug_unload();
// A #DB of the running vCPU from ring 3: the CPU's DR6 folded into the
// virtual one and the trap delivered to the guest's #DB handler (its domain
// crashed when it has none). Always true: f is ready to return to.
bool guest_debug_trap(TrapFrame& f);
// A #DB in ring 0 that a guest's data breakpoint raised while the hypervisor
// accessed that guest's memory (a copy for a hypercall, a bounce frame):
// ignored as on Xen, true. False for any other #DB, the hypervisor's bug.
bool guest_debug_in_hypervisor(const TrapFrame& f);
// An event the emulated instruction raised for the guest's debugger: the
// single step (TF) and the I/O breakpoints `hits` (B0-B3) into the virtual
// DR6, the #DB delivered. guest_emulate's last step.
void guest_debug_after_emulation(TrapFrame& f, uint32_t hits);

} // namespace pvmmu::x86
