// The x86-64 page-table entry format (Intel SDM Vol. 3A §4.5, tables 4-15 to
// 4-20), shared by every level, and the walk's indexing: hardware facts the
// hypervisor core (core/pte.h) and the guest library (guest/pte.h) both use,
// each asserted where defined.
#pragma once

#include "x86/types.h"

namespace pvmmu::x86 {

namespace pte_bit {
inline constexpr uint64_t P = 1ull << 0;      // present
inline constexpr uint64_t RW = 1ull << 1;     // writable
inline constexpr uint64_t US = 1ull << 2;     // user
inline constexpr uint64_t PWT = 1ull << 3;    // write-through  (cache attribute)
inline constexpr uint64_t PCD = 1ull << 4;    // cache disable  (cache attribute)
inline constexpr uint64_t A = 1ull << 5;      // accessed, set by the walker
inline constexpr uint64_t D = 1ull << 6;      // dirty, set by the walker (L1 only)
inline constexpr uint64_t PAT = 1ull << 7;    // L1: PAT (cache attribute); L2/L3: PS
inline constexpr uint64_t PS = 1ull << 7;     // in an L2/L3 entry: a large page
inline constexpr uint64_t G = 1ull << 8;      // global
inline constexpr uint64_t AVL9 = 1ull << 9;   // ignored by hardware: software bits 11:9
inline constexpr uint64_t AVL10 = 1ull << 10;
inline constexpr uint64_t AVL11 = 1ull << 11;
inline constexpr uint64_t AVL_LO = AVL9 | AVL10 | AVL11;
inline constexpr uint64_t ADDR = 0x000f'ffff'ffff'f000ull;   // 51:12
inline constexpr uint64_t AVL_HI = 0x7full << 52;            // ignored by hardware, 58:52
inline constexpr uint64_t PK = 0xfull << 59;                 // protection key, 62:59
inline constexpr uint64_t NX = 1ull << 63;                   // execute disable
inline constexpr uint64_t AD = A | D;
} // namespace pte_bit

static_assert(pte_bit::AVL_LO == 0x7ull << 9);
static_assert((pte_bit::ADDR & (pte_bit::AVL_HI | pte_bit::PK | pte_bit::NX | 0xfffull)) == 0);
static_assert((pte_bit::ADDR | pte_bit::AVL_HI | pte_bit::PK | pte_bit::NX | 0xfffull) == ~0ull);

// Page-table levels: 1 = PT (maps 4 KiB pages), 4 = PML4.
enum class Level : uint8_t { L1 = 1, L2 = 2, L3 = 3, L4 = 4 };

// Index of va into a table of the given level (bits 47:39, 38:30, 29:21, 20:12).
constexpr unsigned table_index(Vaddr va, Level l)
{
    return unsigned(va.v >> (kPageShift + 9 * (unsigned(l) - 1))) & (kEntriesPerTable - 1);
}
static_assert(table_index(Vaddr{0x0000'7f80'0000'0000}, Level::L4) == 255);
static_assert(table_index(Vaddr{0x20'0000}, Level::L2) == 1);
static_assert(table_index(Vaddr{0x1000}, Level::L1) == 1);

// Bytes one entry of a table at level l maps.
constexpr uint64_t level_span(Level l) { return kPageSize << (9 * (unsigned(l) - 1)); }
static_assert(level_span(Level::L2) == 2ull << 20 && level_span(Level::L4) == 512ull << 30);

// Canonical (bits 63:47 all equal): an architectural rule for linear addresses.
constexpr bool canonical(Vaddr va)
{
    const int64_t s = int64_t(va.v) >> 47;
    return s == 0 || s == -1;
}

} // namespace pvmmu::x86
