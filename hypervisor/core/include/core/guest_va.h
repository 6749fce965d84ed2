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

} // namespace pvmmu
