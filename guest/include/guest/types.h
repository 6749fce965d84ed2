// The numbers the guest library handles, as distinct types: guest virtual
// addresses, guest frame numbers (the guest's own numbering of its memory)
// and machine frame numbers / addresses (what the hypervisor's page tables
// hold). Mixing them is a compile error. The x86 ones (x86/types.h) are the
// hypervisor core's too; the guest's own are added here.
#pragma once

#include <stdint.h>

#include "x86/pte.h"
#include "x86/types.h"

namespace pvmmu::guest {

using x86::kEntriesPerTable;
using x86::kPageShift;
using x86::kPageSize;
using x86::Level;
using x86::level_span;
using x86::Maddr;
using x86::maddr_of;
using x86::Mfn;
using x86::table_index;
using Va = x86::Vaddr;   // guest virtual address

inline constexpr unsigned kPteLine = 8;   // entries per 64-byte cache line

// Guest frame number: index into the domain's memory (Xen's pfn).
struct Gpfn {
    uint64_t v;
    constexpr bool operator==(const Gpfn&) const = default;
};

// v rounded up to a multiple of a (a power of two).
constexpr uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }
static_assert(align_up(1, kPageSize) == kPageSize && align_up(kPageSize, kPageSize) == kPageSize);

} // namespace pvmmu::guest
