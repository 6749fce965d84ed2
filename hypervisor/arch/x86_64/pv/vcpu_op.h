// vcpu_op's work that others start (vcpu_op.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// VCPUOP_up: the vCPU's CPU (idle) is handed the vCPU and kicked; 0, or
// -EINVAL when it was never initialised (pv/vcpu_op.cc). Also how every
// domain's vCPU 0 starts at boot (the boot CPU's kick to itself included).
long vcpu_up(Vcpu& v);

} // namespace pvmmu::x86
