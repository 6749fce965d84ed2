// Benchmarking only, UNSAFE: the native window of a domain whose module string
// holds the word "unsafe-native-pt" (docs/abi.md §10 "Unsafe native page
// tables", docs/security.md). Every L4 of that domain the core validates holds
// in slot HV_SLOT_NATIVE_WINDOW (271, mm/layout.h) an alias of the domain's own
// frames, page tables included — frame i of its run at HV_NATIVE_WINDOW_VIRT
// + i * 4 KiB, user-accessible, writable, NX — and nothing else. The guest
// then changes its PTEs by plain cmpxchg (docs/design.md §7's `native` ceiling), and can
// change anything else there too: stores to its own tables bypass every rule
// of docs/design.md §4, so such a domain is outside the threat model.
//
// Why the core's checks still hold for every other domain: a reserved L4 slot
// must hold exactly the platform's entry for the table's owner
// (Platform::reserved_l4_entry), which is this window for such a domain and 0
// in slot 271 for any other; the core never walks reserved slots, and
// native_window_check walks the window itself.
#pragma once

#include "core/types.h"

namespace pvmmu::x86 {

// Takes the window's tables from free frames (they become the hypervisor's),
// then the domain's run of nr_frames frames after them (first frame in
// `first`), maps the run in the window and warns on the console. Called in
// place of core_free_run, before the domain's first L4 is validated. 0,
// -EINVAL (no room for the run in one L4 slot) or -ENOMEM.
int native_window_build(DomId id, uint64_t nr_frames, Mfn& first);

// The L4 entry of domain `id`'s window; 0 for a domain without one.
uint64_t native_window_l4e(DomId id);

// Domain `id`'s memory was given back: its window maps nothing any more
// (its tables stay, linked from the L4 entry, so a table the teardown had to
// keep still holds the platform's entry). No CPU runs the domain by then, and
// leaving it reloaded CR3, so no TLB holds the window's leaves (never global).
void native_window_release(DomId id);

// Walks every window: each must map exactly its domain's frames, each once,
// at its own offset, with the window's flags, through hypervisor-owned tables.
// A released window must map nothing. Prints each window and each violation
// (a few); returns the violations.
unsigned native_window_check();

} // namespace pvmmu::x86
