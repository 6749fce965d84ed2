// Strong types for the numbers the core handles: machine frame numbers, machine
// addresses and guest virtual addresses (x86/types.h, shared with the guest
// library), domain and CPU ids, CPU sets. Mixing them is a compile error; each
// converts only through a named function.
#pragma once

#include <stdint.h>
#include <stddef.h>

#include "x86/types.h"

namespace pvmmu {

using x86::kEntriesPerTable;
using x86::kPageShift;
using x86::kPageSize;
using x86::Maddr;
using x86::maddr_of;
using x86::Mfn;
using x86::Vaddr;

inline constexpr unsigned kMaxCpus = 64;                   // CpuMask is one word

using DomId = uint16_t;   // Xen's domid_t
using CpuId = uint32_t;   // physical CPU (on the sim: one per vCPU thread)

constexpr uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// A set of physical CPUs.
struct CpuMask {
    uint64_t bits = 0;
    constexpr bool has(CpuId c) const { return (bits >> c) & 1; }
    constexpr void set(CpuId c) { bits |= uint64_t(1) << c; }
    constexpr bool empty() const { return bits == 0; }
    constexpr bool operator==(const CpuMask&) const = default;
};

} // namespace pvmmu
