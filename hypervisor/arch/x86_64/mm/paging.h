// The hypervisor's own page tables ("4-Level Paging", SDM Vol. 3A): one set
// shared by every CPU, built at boot from the boot allocator and reached
// through the direct map. Upper-level entries are P|RW only, so each leaf
// alone decides writable, executable and (never) user; the invariant check
// (mm/hv_invariants.h) walks them.
#pragma once

#include "boot/multiboot.h"
#include "core/pte.h"

namespace pvmmu::x86 {

// Leaf permissions of the hypervisor's mappings. A and D preset: the walker
// never needs to write the hypervisor's tables.
namespace hv_pte {
inline constexpr uint64_t kBase = pte_bit::P | pte_bit::A | pte_bit::D;
inline constexpr uint64_t kText = kBase;                                  // R X
inline constexpr uint64_t kRodata = kBase | pte_bit::NX;                  // R
inline constexpr uint64_t kData = kBase | pte_bit::RW | pte_bit::NX;      // R W
inline constexpr uint64_t kUncached = pte_bit::PCD | pte_bit::PWT;        // PAT entry 3: UC
} // namespace hv_pte

// The root (L4) of the hypervisor's tables: below 4 GiB, so the trampoline's
// 32-bit mov to CR3 can load it.
Maddr hv_root();

// Builds the final tables — the image with per-section permissions, the
// direct map of [0, max(4 GiB, top of RAM)), the trampoline page at its
// physical address — and loads them on this (the boot) CPU.
void paging_build(const BootInfo& bi);

// Maps one 4 KiB page, allocating missing tables. Only before the APs run,
// or in parts of the address space no other CPU uses yet.
void map_page(Vaddr va, Maddr pa, uint64_t flags);

// Removes the low identity map of the trampoline once every AP is up. The
// caller flushes every CPU's TLB afterwards.
void paging_drop_identity();

} // namespace pvmmu::x86
