// The invariants of a domain's event state (core/events.h), checked from
// scratch on a quiescent domain: no raise in flight and its guest between
// two scans of its bits (a guest that consumes as Linux does: upcall
// flag, then selector, then each port's pending bit). The tests, the
// concurrency test and the fuzzer run it; tests/invariants shows it catching
// each broken rule.
#pragma once

#include "core/invariants.h"

namespace pvmmu {

// What the FIFO ABI's rules may assume of the guest's words (its control
// blocks and event array): Protocol, that the guest kept the protocol
// (core/event_fifo.h) and prepared them as Linux does (a cleared control
// block, a page of masked events); AnyWords, nothing: a guest that wrote
// anything there (the fuzzer's) loses only its own events, so the queue
// rules are left out and the rest still hold.
enum class FifoWords : uint8_t { Protocol, AnyWords };

// Adds one violation per broken rule to `report` (Violation::index: the
// port, or the vCPU for the per-vCPU rules); returns report.ok(). The
// report is not cleared, so it may follow check_invariants'.
bool check_event_invariants(Domain& d, InvariantReport& report, FifoWords words = FifoWords::Protocol);

// Every interdomain channel between two domains: each end names the other,
// in the other domain. Adds to `report` as above.
bool check_interdomain_channels(Hypervisor& hv, InvariantReport& report);

} // namespace pvmmu
