// The boot allocator: hands out frames of usable RAM above everything the
// loader left (BootInfo::loader_end), lowest first, zeroed, for the hypervisor's
// page tables, per-CPU areas and frame table. It only moves upward, so what it
// handed out is exactly the usable RAM below boot_alloc_end(): frames.cc marks
// that as the hypervisor's and everything above as free. Boot time only; it
// panics when memory runs out, as nothing can run then anyway.
#pragma once

#include "boot/multiboot.h"
#include "core/types.h"

namespace pvmmu::x86 {

void boot_alloc_init(const BootInfo& bi);

// Allocations must stay below `limit` (the boot window until paging_build).
void boot_alloc_set_limit(uint64_t limit);

// `bytes` rounded up to frames, contiguous, zeroed; page aligned.
Maddr boot_alloc(uint64_t bytes);
inline Maddr boot_alloc_frame() { return boot_alloc(kPageSize); }

// The first address never handed out; after boot_alloc_close, nothing more is.
uint64_t boot_alloc_end();
void boot_alloc_close();

} // namespace pvmmu::x86
