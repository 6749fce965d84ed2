// The library's range updater: one L1's share of an mprotect, batched as docs/design.md §6
// says. Per L1 (the caller holds its lock):
//   FlagRange  every present entry takes the same mask and bits, so the span from
//              the first to the last entry that changes is one
//              MMU_FLAG_RANGE_UPDATE request (holes are P=0 and left alone);
//              PROT_NONE pages coming back (P 0 -> 1: references to take) go
//              into cmd-2 requests of the same array;
//   Atomic     one cmd-2 request per entry that changes;
//   Normal     per present entry a cmd-0 clear and a cmd-0 set (get_and_clear
//              + set, A/D assumed the worst as ptep_get_and_clear explains).
// Requests go out MmuConfig::batch_ptes PTEs per hypercall, and always before
// this returns. A level refused at run time (-ENOSYS / -EPERM) is dropped and the
// L1 redone from what its entries now hold (the plan is a target, so redoing it
// is idempotent).
#pragma once

#include "guest/tlb.h"
#include "guest/guest.h"

namespace pvmmu::guest {

[[nodiscard]] int change_pte_range(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan);

} // namespace pvmmu::guest
