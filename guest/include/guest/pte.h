// x86-64 page-table entries as the guest uses them: the hardware's bits
// (x86/pte.h, shared with the hypervisor core) under `pte::`, the guest's own
// software bit for PROT_NONE, and the mapping from mprotect's PROT_* to entry
// bits.
#pragma once

#include "guest/types.h"

namespace pvmmu::guest {

namespace pte {
// The entry format itself is the hardware's (x86/pte.h).
using namespace x86::pte_bit;

// A page that exists but is mapped PROT_NONE: P=0 keeps every access out, the
// frame stays in the address bits, and this software bit tells the fault handler
// (and mprotect) that it is not a hole to fill with a fresh zero page. Linux x86
// reuses G for this; pvmmu's core rejects G, so an available bit is used.
inline constexpr uint64_t PROTNONE = AVL9;

// Flags of an L2-L4 entry that links the next table (US is forced by the core).
inline constexpr uint64_t kTableLink = P | RW | US | A;
} // namespace pte

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
