// The FIFO ABI's part of the event-state check (core/event_invariants.h).
#pragma once

#include "core/events.h"
#include "core/invariants.h"

namespace pvmmu {

void check_fifo_queues(DomainEvents& e, const Domain& d, InvariantReport& r);

} // namespace pvmmu
