// The core's view of a page-table entry: the x86-64 entry format and the
// walk's indexing come from x86/pte.h (shared with the guest library); `Pte`,
// the strong type of an entry's value, is the core's own.
#pragma once

#include "core/types.h"
#include "x86/pte.h"

namespace pvmmu {

namespace pte_bit = x86::pte_bit;
using x86::canonical;
using x86::Level;
using x86::level_span;
using x86::table_index;

// A page-table entry value.
struct Pte {
    uint64_t v = 0;
    constexpr bool present() const { return v & pte_bit::P; }
    constexpr bool writable() const { return v & pte_bit::RW; }
    constexpr Mfn mfn() const { return Mfn{(v & pte_bit::ADDR) >> kPageShift}; }
    constexpr uint64_t flags() const { return v & ~pte_bit::ADDR; }
    constexpr bool operator==(const Pte&) const = default;
    static constexpr Pte make(Mfn m, uint64_t flags) { return Pte{(m.v << kPageShift) | flags}; }
};

} // namespace pvmmu
