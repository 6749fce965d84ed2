// TLB shootdown by IPI (docs/design.md §5): a CPU that must flush other CPUs' TLBs
// writes a request into each target's mailbox, sends it kVectorShootdown and
// waits until every target has flushed and acknowledged. A waiting CPU serves
// its own mailbox while it spins, so two CPUs that shoot at each other (with
// interrupts off) both make progress.
#pragma once

#include "core/platform.h"
#include "core/tlb_clock.h"

namespace pvmmu::x86 {

// Full flushes are recorded in this clock once the core exists (TlbClock
// protocol of core/tlb_clock.h); before that there is nothing to record.
void shootdown_set_clock(TlbClock* clock);

// Flushes the TLBs of `cpus` (the caller's included if named) and returns when
// all have acknowledged. CPUs that are not online are skipped.
void shootdown_flush(CpuMask cpus, FlushRequest req);

// Serves this CPU's mailbox: the IPI handler and every spin-wait call it.
void shootdown_serve();

// Counters for the boot report.
uint64_t shootdown_ipis_sent();

} // namespace pvmmu::x86
