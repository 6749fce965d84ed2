// vm_assist(cmd, type) (<xen/xen.h> VMASST_*; docs/abi.md §10): Xen's checks in
// Xen's order, the type, then the command. The platform records what a domain
// enabled (pv/vm_assist.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

namespace pvmmu {

// The types Xen knows for a 64-bit PV guest.
inline constexpr uint64_t kVmAssistKnown =
    (1ull << VMASST_TYPE_4gb_segments) | (1ull << VMASST_TYPE_4gb_segments_notify) |
    (1ull << VMASST_TYPE_writable_pagetables) | (1ull << VMASST_TYPE_pae_extended_cr3) |
    (1ull << VMASST_TYPE_architectural_iopl) | (1ull << VMASST_TYPE_runstate_update_flag) |
    (1ull << VMASST_TYPE_m2p_strict);
// Those pvmmu enables: the assists that change nothing for a 64-bit guest,
// writable page tables (always on, pv/ptwr.cc, as on Xen) and the runstate
// area's update flag (pv/runstate.cc).
inline constexpr uint64_t kVmAssistOffered =
    (1ull << VMASST_TYPE_4gb_segments) | (1ull << VMASST_TYPE_4gb_segments_notify) |
    (1ull << VMASST_TYPE_writable_pagetables) | (1ull << VMASST_TYPE_pae_extended_cr3) |
    (1ull << VMASST_TYPE_runstate_update_flag);

// 0 when the caller is to set (enable) or clear (disable) the type's bit,
// else the negative errno.
constexpr long vm_assist_result(uint32_t cmd, uint32_t type)
{
    if (type >= 64 || !((kVmAssistKnown >> type) & 1)) return -XEN_EINVAL;
    switch (cmd) {
    case VMASST_CMD_enable: return (kVmAssistOffered >> type) & 1 ? 0 : -XEN_EINVAL;
    case VMASST_CMD_disable: return 0;
    default: return -XEN_ENOSYS;
    }
}

} // namespace pvmmu
