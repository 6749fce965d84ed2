// The guests' read-only view of the machine-to-physical table: Xen maps its
// M2P in every x86-64 PV guest's L4 slot 256 (RO_MPT_VIRT_START =
// MACH2PHYS_VIRT_START, <xen/arch-x86/xen-x86_64.h>), where a guest kernel in
// ring 3 reads the gpfn of machine frame m at MACH2PHYS_VIRT_START + m * 8
// and can never write it. pvmmu does the same with the core's M2P
// (Hypervisor::m2p, one 8-byte unsigned long per machine frame, as Xen's).
//
// The mapping's tables are the hypervisor's own (taken at boot), never in its
// own L4: only guest L4s hold slot 256 (Platform::reserved_l4_entry), so the
// hypervisor's tables stay free of user-accessible entries (mm/hv_invariants.cc).
#pragma once

#include "core/types.h"

namespace pvmmu::x86 {

// Maps the M2P's `bytes` (whole pages, from machine address `m2p`) with
// tables from the boot allocator. Called once, before boot_alloc_close.
void m2p_map_build(Maddr m2p, uint64_t bytes);

// Slot 256's entry of every guest L4; 0 before m2p_map_build.
uint64_t m2p_map_l4e();

// Walks the mapping: every page of the M2P once, in order, user-readable,
// not writable, not executable, through hypervisor-owned tables, and
// nothing else. Prints a line; returns the violations.
unsigned m2p_map_check();

} // namespace pvmmu::x86
