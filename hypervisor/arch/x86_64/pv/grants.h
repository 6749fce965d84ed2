// A bare-metal domain's grant table (docs/architecture.md §11 "Platforms"):
// the storage the core's GrantTable needs (core/grant_table.h GrantStorage),
// taken from free machine memory when the domain is built and given back
// when it is torn down.
#pragma once

#include "core/grant_limits.h"
#include "core/grant_table.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// The limits a module's words may ask for: core/grant_limits.h.

// Gives g a grant table with these limits: its table frames (owned by the
// domain, counted in Domain::nr_frames, typed writable only as setup_table
// grows the table) and the hypervisor's storage for the active entries and
// the maptrack, one run at the top of free memory, so that the domains'
// own frames stay where the loader put them, one after the other. Before
// the domain runs. 0, or -EINVAL (grant_limits_check) or -ENOMEM with nothing taken.
int guest_grants_init(GuestDomain& g, const GrantLimits& limits);

// After relinquish_domain: the table frames still owned (kept because another
// domain still pins one of its grants) among `kept`, and the storage given
// back unless the domain is still registered (something of it is kept: a
// peer could still reach its active entries). Prints one line.
void guest_grants_release(GuestDomain& g, uint64_t& freed, uint64_t& kept);

} // namespace pvmmu::x86
