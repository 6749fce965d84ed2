// The numbers the guest library handles, as distinct types: guest
// virtual addresses, guest frame numbers (the guest's own numbering of its
// memory) and machine frame numbers / addresses (what the hypervisor's
// page tables hold). Mixing them is a compile error.
#pragma once

#include <stdint.h>

namespace pvmmu::guest {

inline constexpr unsigned kPageShift = 12;
inline constexpr uint64_t kPageSize = 1ull << kPageShift;
inline constexpr unsigned kEntriesPerTable = 512;   // x86-64, 4 KiB tables
inline constexpr unsigned kPteLine = 8;             // entries per 64-byte cache line
static_assert(kEntriesPerTable * sizeof(uint64_t) == kPageSize);

// Guest virtual address.
struct Va {
    uint64_t v;
    constexpr bool operator==(const Va&) const = default;
    constexpr Va operator+(uint64_t off) const { return Va{v + off}; }
    constexpr Va operator-(uint64_t off) const { return Va{v - off}; }
};

// Guest frame number: index into the domain's memory (Xen's pfn).
struct Gpfn {
    uint64_t v;
    constexpr bool operator==(const Gpfn&) const = default;
};

// Machine frame number, as page-table entries and hypercalls name frames.
struct Mfn {
    uint64_t v;
    constexpr bool operator==(const Mfn&) const = default;
};

// Machine address (of a page-table entry: the `ptr` of mmu_update).
struct Maddr {
    uint64_t v;
    constexpr bool operator==(const Maddr&) const = default;
};

constexpr Maddr maddr_of(Mfn m) { return Maddr{m.v << kPageShift}; }

// Page-table levels: 1 = PT (maps 4 KiB pages), 4 = PML4.
enum class Level : uint8_t { L1 = 1, L2 = 2, L3 = 3, L4 = 4 };

// Index of va into a table of the given level (bits 47:39, 38:30, 29:21, 20:12).
constexpr unsigned table_index(Va va, Level l)
{
    return unsigned(va.v >> (kPageShift + 9 * (unsigned(l) - 1))) & (kEntriesPerTable - 1);
}
static_assert(table_index(Va{0x0000'7f80'0000'0000}, Level::L4) == 255);
static_assert(table_index(Va{0x20'0000}, Level::L2) == 1);

// v rounded up to a multiple of a (a power of two).
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
static_assert(align_up(1, kPageSize) == kPageSize && align_up(kPageSize, kPageSize) == kPageSize);

// Bytes one entry of a table at level l maps.
constexpr uint64_t level_span(Level l) { return kPageSize << (9 * (unsigned(l) - 1)); }
static_assert(level_span(Level::L2) == 2ull << 20 && level_span(Level::L4) == 512ull << 30);

} // namespace pvmmu::guest
