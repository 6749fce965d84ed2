// Writable page tables: a PV kernel's write to its own L1 table (ptwr.cc).
#pragma once

#include "cpu/traps.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// Xen's "writable page tables" (pv/ptwr.cc, docs/abi.md §12.5): a #PF
// of the guest kernel's write to one of its own L1 tables, emulated; the
// instruction's length, 0 when it is not (the #PF goes to the guest as the
// CPU raised it, CR2 included).
unsigned guest_pt_write(Vcpu& v, TrapFrame& f);

} // namespace pvmmu::x86
