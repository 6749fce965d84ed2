// Page-table management through hypercalls only (page tables are read-only to
// the guest): allocate, zero, pin, link, unlink, unpin, free, switch. The guest
// reads tables through the physmap and writes them with mmu_update / mmuext_op.
#pragma once

#include "guest/guest.h"
#include "guest/pte.h"

namespace pvmmu::guest {

// Zeroes a frame through its (writable) physmap mapping.
[[nodiscard]] bool zero_frame(Cpu& c, Gpfn g);

// Maps gpfn g writable or read-only in the physmap (its RW bit only). A frame
// must be read-only everywhere before it can become a page table, and is made
// writable again once it is none.
[[nodiscard]] int physmap_set_writable(Cpu& c, Gpfn g, bool writable);

// A frame ready to become a page table: allocated, zeroed, the zeroing made
// visible to walkers (a clean per line when the walker is not coherent, docs/design.md §6:
// ordered before the table can be linked), then read-only in the physmap.
[[nodiscard]] int pt_alloc(Cpu& c, Gpfn& out);

// Gives back a frame that is no page table any more (unlinked and unpinned): it
// is made writable again and returned to the allocator. The hypervisor refuses
// the writable mapping (-EINVAL) while anything still uses it as a table.
[[nodiscard]] int pt_free(Cpu& c, Gpfn t);

[[nodiscard]] int pt_pin(Cpu& c, Gpfn t, Level l);
[[nodiscard]] int pt_unpin(Cpu& c, Gpfn t);

// Links table `child` into entry `index` of table `parent` (the hypervisor
// validates child as a table of the level below parent's), and unlinks it.
[[nodiscard]] int pt_link(Cpu& c, Gpfn parent, unsigned index, Gpfn child);
[[nodiscard]] int pt_unlink(Cpu& c, Gpfn parent, unsigned index);

// The table linked at entry `index` of `parent`; false if none (or not ours).
[[nodiscard]] bool pt_child(Cpu& c, Gpfn parent, unsigned index, Gpfn& child);

// The table at entry `index` of `parent`, or a new empty one linked there.
[[nodiscard]] int pt_child_or_new(Cpu& c, Gpfn parent, unsigned index, Gpfn& child);

// Makes l4 this vCPU's root (MMUEXT_NEW_BASEPTR); it must map the physmap too.
[[nodiscard]] int switch_base(Cpu& c, Gpfn l4);

} // namespace pvmmu::guest
