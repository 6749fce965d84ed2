// A vCPU's %fs and %gs bases (segment_base.cc): set_segment_base and the
// emulated wrmsr of the base MSRs.
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// Sets segment base `which` (SEGBASE_FS, SEGBASE_GS_KERNEL, SEGBASE_GS_USER)
// of the running vCPU v; false for a base or `which` Xen refuses.
bool set_segment_base(Vcpu& v, unsigned which, uint64_t base);

} // namespace pvmmu::x86
