// A vCPU's virtual CR0.TS (fpu.cc): fpu_taskswitch, clts, mov to CR0 and
// the #NM it raises.
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// Sets the virtual CR0.TS of the running vCPU, and the CPU's with it.
void set_fpu_ts(VcpuArch& a, bool on);

// A vCPU starting on this CPU: FPU instructions allowed (CR0.TS clear), the
// x87, MXCSR and XMM state at their initial values.
void guest_fpu_reset(Vcpu& v);

} // namespace pvmmu::x86
