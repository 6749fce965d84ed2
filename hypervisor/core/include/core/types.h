// Strong types for the numbers the core handles: machine frame numbers, machine
// addresses, guest virtual addresses and page-table entries. Mixing them is a
// compile error; each converts only through a named function.
#pragma once

#include <stdint.h>
#include <stddef.h>

namespace pvmmu {

inline constexpr unsigned kPageShift = 12;
inline constexpr uint64_t kPageSize = 1ull << kPageShift;
inline constexpr unsigned kEntriesPerTable = 512;          // x86-64, 4 KiB tables
inline constexpr unsigned kMaxCpus = 64;                   // CpuMask is one word
static_assert(kEntriesPerTable * sizeof(uint64_t) == kPageSize);

using DomId = uint16_t;   // Xen's domid_t
using CpuId = uint32_t;   // physical CPU (on the sim: one per vCPU thread)

// Machine frame number.
struct Mfn {
    uint64_t v;
    constexpr bool operator==(const Mfn&) const = default;
};

// Machine (host-physical) address.
struct Maddr {
    uint64_t v;
    constexpr Mfn mfn() const { return Mfn{v >> kPageShift}; }
    constexpr unsigned offset() const { return unsigned(v & (kPageSize - 1)); }
    constexpr bool operator==(const Maddr&) const = default;
};
constexpr Maddr maddr_of(Mfn m) { return Maddr{m.v << kPageShift}; }

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Guest virtual address.
struct Vaddr {
    uint64_t v;
    constexpr bool operator==(const Vaddr&) const = default;
};

// A set of physical CPUs.
struct CpuMask {
    uint64_t bits = 0;
    constexpr bool has(CpuId c) const { return (bits >> c) & 1; }
    constexpr void set(CpuId c) { bits |= uint64_t(1) << c; }
    constexpr bool empty() const { return bits == 0; }
    constexpr bool operator==(const CpuMask&) const = default;
};

} // namespace pvmmu
