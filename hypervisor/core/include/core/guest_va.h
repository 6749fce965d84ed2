// The guest's part of the address space of a 64-bit PV domain (docs/abi.md
// §10; the hypervisor's own part: mm/layout.h on bare metal): the lower half,
// and the upper half above the hypervisor's L4 slots 256..271, which the core
// reserves (HvConfig's defaults, which the bare-metal core runs with).
#pragma once

#include <stdint.h>

#include "core/hypervisor.h"

namespace pvmmu {

inline constexpr uint64_t kGuestLowerEnd = 0x0000800000000000;     // slot 256
inline constexpr uint64_t kGuestUpperStart = 0xFFFF880000000000;   // slot 272
static_assert(HvConfig{}.l4_reserved_first == 256 && HvConfig{}.l4_reserved_last == 271);
static_assert(kGuestUpperStart == (~0ull << 47 | uint64_t(HvConfig{}.l4_reserved_last + 1) << 39));

// An address a guest may name as code or stack: canonical, and not in the
// hypervisor's L4 slots. Two compares: the copies of every hypercall check
// both ends of their range with it.
constexpr bool guest_va_ok(uint64_t va) { return va < kGuestLowerEnd || va >= kGuestUpperStart; }
static_assert(guest_va_ok(0x00007fffffffffff) && !guest_va_ok(0x0000800000000000) &&
              !guest_va_ok(0xffff800000000000) && !guest_va_ok(0xffff87ffffffffff) &&
              guest_va_ok(0xffff880000000000) && guest_va_ok(~0ull));   // the ends of each part

// Whether the n bytes at va lie in one of the guest's two parts: not
// wrapping, and both ends in the same part, so everything between them is
// in it too, whatever n. False for n == 0 (last is va - 1: below va, or ~0
// for va 0, in neither part). The range test of every guest copy on bare
// metal (mm/platform.h) and of the #PF path's fetch (pv/ptwr.cc).
constexpr bool guest_range_ok(uint64_t va, uint64_t n)
{
    const uint64_t last = va + n - 1;
    return last >= va && (last < kGuestLowerEnd || va >= kGuestUpperStart);
}
static_assert(guest_range_ok(0x00007ffffffffff0, 16) && !guest_range_ok(0x00007ffffffffff1, 16) &&
              !guest_range_ok(0xffff87fffffffff8, 16) && guest_range_ok(0xffff880000000000, 16) &&
              !guest_range_ok(~0ull - 7, 16) && !guest_range_ok(0x1000, 0) && !guest_range_ok(0, 0));

} // namespace pvmmu
