// The hypervisor's check of its own address space, run after boot on the
// live tables (as Hedron's boot test does):
//  - no hypervisor page is user-accessible: no entry at any level has U/S set;
//  - no page is both writable and executable (effective RW and no NX along
//    the path), so no hypervisor code can be modified through its mapping;
//  - nothing is mapped outside the hypervisor's L4 slots (the boot identity
//    map is gone), so guests will find their half empty;
//  - every page-table frame is the hypervisor's in the core's frame table, so
//    no guest can ever be given or map it;
//  - on every online CPU: paging on, CR0.WP (read-only applies to ring 0),
//    EFER.NXE, and CR4.SMEP, SMAP and UMIP wherever CPUID has them
//    (cpu/cpu_features.h), long mode active, CR3 = the hypervisor's root.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

struct HvMapStats {
    uint64_t tables = 0;
    uint64_t pages_4k = 0, pages_2m = 0, pages_1g = 0;
    uint64_t exec = 0, read_only = 0, writable = 0;   // 4 KiB leaves by permission
    uint64_t cpus = 0;
    uint64_t violations = 0;
};

// Prints each violation (up to a few) and returns true when there is none.
bool hv_check_invariants(HvMapStats& stats);

} // namespace pvmmu::x86
