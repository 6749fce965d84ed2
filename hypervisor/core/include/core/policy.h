// Per-domain policy hooks (docs/design.md §4, like Xen's XSM): each command can be denied per
// domain; a denied request fails with -EPERM and changes nothing.
#pragma once

#include <stdint.h>

#include <atomic>

#include <pvmmu/abi.h>

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
    GrantMap,         // grant_table_op map_grant_ref and copy of another domain's grants
    EvtchnInterdomain,// event_channel_op: a channel whose other end is another domain
    Count
};

// Checked on every request from any vCPU while another may add a denial
// (PVMMUOP_deny): one atomic word, read relaxed (a request that raced with the
// denial may still pass, as one issued just before it would).
class Policy {
public:
    bool allows(Perm p) const { return !((denied_.load(std::memory_order_relaxed) >> unsigned(p)) & 1); }
    void deny(Perm p) { denied_.fetch_or(uint32_t(1) << unsigned(p), std::memory_order_relaxed); }
    void allow(Perm p) { denied_.fetch_and(~(uint32_t(1) << unsigned(p)), std::memory_order_relaxed); }

    // Denies the commands of the PVMMU_DENY_* bits (abi.h: the `deny=` boot
    // word, PVMMUOP_deny). false, and nothing denied, when a bit is unknown
    // (any above bit 31 too). Only ever adds denials.
    [[nodiscard]] bool deny_abi(uint64_t bits)
    {
        static constexpr struct {
            uint32_t bit;
            Perm perm;
        } kMap[] = {
            {PVMMU_DENY_MMU_NORMAL, Perm::MmuNormal},       {PVMMU_DENY_MMU_ATOMIC, Perm::MmuAtomic},
            {PVMMU_DENY_FLAG_RANGE, Perm::MmuFlagRange},    {PVMMU_DENY_PIN, Perm::Pin},
            {PVMMU_DENY_TLB_FLUSH, Perm::TlbFlush},         {PVMMU_DENY_UPDATE_VA_MAPPING, Perm::UpdateVaMapping},
            {PVMMU_DENY_MULTICALL, Perm::Multicall},
        };
        if (bits & ~uint64_t(PVMMU_DENY_ALL)) return false;
        for (const auto& m : kMap)
            if (bits & m.bit) deny(m.perm);
        return true;
    }

private:
    // MapForeign is a privilege: denied unless granted.
    std::atomic<uint32_t> denied_{uint32_t(1) << unsigned(Perm::MapForeign)};
};

} // namespace pvmmu
