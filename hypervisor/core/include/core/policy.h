// Per-domain policy hooks (SPEC §4, like Xen's XSM): each command can be denied per
// domain; a denied request fails with -EPERM and changes nothing.
#pragma once

#include <stdint.h>

namespace pvmmu {

enum class Perm : uint8_t {
    MmuNormal,        // mmu_update cmd 0
    MmuMachphys,      // cmd 1
    MmuAtomic,        // cmd 2
    MmuFlagRange,     // cmd 4
    Pin,              // mmuext PIN_L*_TABLE / UNPIN_TABLE
    BasePtr,          // mmuext NEW_BASEPTR / NEW_USER_BASEPTR
    TlbFlush,         // mmuext TLB_FLUSH_* / INVLPG_*
    UpdateVaMapping,  // update_va_mapping
    Multicall,
    MapForeign,       // privilege: map frames of the foreign domain named in mmu_update
    Count
};

class Policy {
public:
    bool allows(Perm p) const { return !((denied_ >> unsigned(p)) & 1); }
    void deny(Perm p) { denied_ |= uint32_t(1) << unsigned(p); }
    void allow(Perm p) { denied_ &= ~(uint32_t(1) << unsigned(p)); }

private:
    // MapForeign is a privilege: denied unless granted.
    uint32_t denied_ = uint32_t(1) << unsigned(Perm::MapForeign);
};

} // namespace pvmmu
