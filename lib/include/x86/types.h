// The x86-64 numbers the hypervisor core and the guest library both handle,
// as distinct types: machine frame numbers, machine addresses and virtual
// addresses. Mixing them is a compile error; each converts only through a
// named function. The core (core/types.h) and the guest library
// (guest/types.h) bring these names into their namespaces and add their own.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

inline constexpr unsigned kPageShift = 12;
inline constexpr uint64_t kPageSize = 1ull << kPageShift;
inline constexpr unsigned kEntriesPerTable = 512;   // 4 KiB tables of 8-byte entries
static_assert(kEntriesPerTable * sizeof(uint64_t) == kPageSize);

// Machine frame number, as page-table entries and hypercalls name frames.
struct Mfn {
    uint64_t v;
    constexpr bool operator==(const Mfn&) const = default;
};

// Machine (host-physical) address, e.g. of a page-table entry (the `ptr` of
// mmu_update, <xen/xen.h>).
struct Maddr {
    uint64_t v;
    constexpr Mfn mfn() const { return Mfn{v >> kPageShift}; }
    constexpr unsigned offset() const { return unsigned(v & (kPageSize - 1)); }
    constexpr bool operator==(const Maddr&) const = default;
};
constexpr Maddr maddr_of(Mfn m) { return Maddr{m.v << kPageShift}; }

// Virtual address (a guest's).
struct Vaddr {
    uint64_t v;
    constexpr bool operator==(const Vaddr&) const = default;
    constexpr Vaddr operator+(uint64_t off) const { return Vaddr{v + off}; }
    constexpr Vaddr operator-(uint64_t off) const { return Vaddr{v - off}; }
};

} // namespace pvmmu::x86
