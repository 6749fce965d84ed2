// set_segment_base's argument rules (<xen/arch-x86/xen-x86_64.h> SEGBASE_*;
// docs/abi.md §10, docs/security.md "Segment bases"), as Xen 4.17 answers
// them, with pvmmu's one difference. Only the decisions: the platform writes
// the MSRs and loads %gs (arch pv/segment_base.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/guest_va.h"

namespace pvmmu {

// SEGBASE_FS, SEGBASE_GS_KERNEL and SEGBASE_GS_USER take a base Xen would
// take (canonical), and here also outside the hypervisor's L4 slots, which
// no guest can map (guest_va_ok), else -EINVAL; SEGBASE_GS_USER_SEL takes
// any selector (a refused one loads as null, and the call still answers
// 0); any other `which` is -EINVAL, as on Xen.
constexpr long set_segment_base_check(unsigned which, uint64_t base)
{
    switch (which) {
    case SEGBASE_FS: case SEGBASE_GS_KERNEL: case SEGBASE_GS_USER: return guest_va_ok(base) ? 0 : -XEN_EINVAL;
    case SEGBASE_GS_USER_SEL: return 0;
    default: return -XEN_EINVAL;
    }
}

// SEGBASE_GS_USER_SEL's selector as it is loaded: RPL forced to 3 unless
// it is a null selector (0 to 3), as Xen loads it.
constexpr uint16_t user_gs_selector(uint16_t sel) { return sel > 3 ? uint16_t(sel | 3) : sel; }

} // namespace pvmmu
