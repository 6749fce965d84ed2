// x86-64 page-table entry bits as the guest uses them (Intel SDM Vol. 3A §4.5),
// the guest's own software bit for PROT_NONE, and the mapping from mprotect's
// PROT_* to entry bits. Hardware facts are asserted where defined.
#pragma once

#include "guest/types.h"

namespace pvmmu::guest {

namespace pte {
inline constexpr uint64_t P = 1ull << 0;
inline constexpr uint64_t RW = 1ull << 1;
inline constexpr uint64_t US = 1ull << 2;
inline constexpr uint64_t PWT = 1ull << 3;
inline constexpr uint64_t PCD = 1ull << 4;
inline constexpr uint64_t A = 1ull << 5;
inline constexpr uint64_t D = 1ull << 6;
inline constexpr uint64_t PAT = 1ull << 7;
inline constexpr uint64_t PS = 1ull << 7;       // in an L2/L3 entry: a large page
inline constexpr uint64_t G = 1ull << 8;
inline constexpr uint64_t AVL9 = 1ull << 9;      // ignored by hardware: software bits 11:9
inline constexpr uint64_t AVL10 = 1ull << 10;
inline constexpr uint64_t AVL11 = 1ull << 11;
inline constexpr uint64_t ADDR = 0x000f'ffff'ffff'f000ull;   // 51:12
inline constexpr uint64_t AVL_HI = 0x7full << 52;            // ignored by hardware: 58:52
inline constexpr uint64_t PK = 0xfull << 59;
inline constexpr uint64_t NX = 1ull << 63;
inline constexpr uint64_t AD = A | D;

// A page that exists but is mapped PROT_NONE: P=0 keeps every access out, the
// frame stays in the address bits, and this software bit tells the fault handler
// (and mprotect) that it is not a hole to fill with a fresh zero page. Linux x86
// reuses G for this; pvmmu's core rejects G, so an available bit is used.
inline constexpr uint64_t PROTNONE = AVL9;

// Flags of an L2-L4 entry that links the next table (US is forced by the core).
inline constexpr uint64_t kTableLink = P | RW | US | A;
} // namespace pte

static_assert((pte::ADDR & (pte::AVL_HI | pte::PK | pte::NX | 0xfffull)) == 0);
static_assert((pte::ADDR | pte::AVL_HI | pte::PK | pte::NX | 0xfffull) == ~0ull);

constexpr bool pte_present(uint64_t e) { return e & pte::P; }
constexpr Mfn pte_mfn(uint64_t e) { return Mfn{(e & pte::ADDR) >> kPageShift}; }
constexpr uint64_t make_pte(Mfn m, uint64_t flags) { return (m.v << kPageShift) | flags; }
// An entry that maps nothing: what a fresh table holds, and what a cleared entry
// becomes (A/D may linger there only between the two requests of a clear).
constexpr bool pte_none(uint64_t e) { return (e & ~pte::AD) == 0; }

// mprotect's protections (the values of POSIX PROT_*).
enum Prot : unsigned {
    kProtNone = 0,
    kProtRead = 1,
    kProtWrite = 2,
    kProtExec = 4,
};
inline constexpr unsigned kProtMask = kProtRead | kProtWrite | kProtExec;

// The entry bits a protection decides. Every other bit (frame, A/D, software
// bits) is kept by a protection change. Write implies read, as on x86.
inline constexpr uint64_t kProtBits = pte::P | pte::RW | pte::NX | pte::PROTNONE;

constexpr uint64_t prot_to_bits(unsigned prot)
{
    if ((prot & kProtMask) == kProtNone) return pte::PROTNONE;
    return pte::P | pte::US | ((prot & kProtWrite) ? pte::RW : 0) | ((prot & kProtExec) ? 0 : pte::NX);
}

// The new value of an entry that maps a page (present or PROT_NONE) under prot:
// one mask and one set of bits, the same for every entry of a range — which is
// what makes an mprotect range one MMU_FLAG_RANGE_UPDATE request (docs/design.md §6).
constexpr uint64_t pte_modify(uint64_t e, unsigned prot) { return (e & ~kProtBits) | prot_to_bits(prot); }

// Whether going from `from` to `to` takes away any access a TLB may have cached:
// only those changes need a flush (raises are fixed in the fault path, seed 004).
constexpr bool pte_reduces(uint64_t from, uint64_t to)
{
    if (!pte_present(from)) return false;
    if (!pte_present(to)) return true;
    return ((from & pte::RW) && !(to & pte::RW)) || (!(from & pte::NX) && (to & pte::NX));
}

static_assert(pte_modify(make_pte(Mfn{5}, pte::P | pte::RW | pte::D), kProtRead) ==
              make_pte(Mfn{5}, pte::P | pte::US | pte::D | pte::NX));
static_assert(!pte_present(pte_modify(make_pte(Mfn{5}, pte::P), kProtNone)));
static_assert(pte_reduces(prot_to_bits(kProtWrite), prot_to_bits(kProtRead)));
static_assert(!pte_reduces(prot_to_bits(kProtRead), prot_to_bits(kProtRead | kProtWrite | kProtExec)));

} // namespace pvmmu::guest
