// The instructions Xen emulates for a PV kernel in ring 3 (emulate.cc).
#pragma once

#include "cpu/traps.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// What Xen emulates for a PV kernel when the CPU refuses it in ring 3
// (pv/emulate.cc): for a #GP, an INT n the trap table's DPL allows and the
// privileged instructions Xen emulates; for a #UD, Xen's forced-emulation
// prefix; for a #NM, the virtual CR0.TS. True when f is ready to return to
// the guest (the instruction done, or another event delivered); false when
// the exception goes to the guest's handler as it is.
bool guest_emulate(TrapFrame& f);

// guest_emulate's #PF: a page-table write of the guest's kernel (pv/ptwr.h),
// for trap_dispatch's own way for page faults (cpu/traps.cc).
bool guest_emulate_page_fault(TrapFrame& f);

// Up to n bytes at rip, as many as the guest's tables let be read (the
// instruction may end on a page that is gone); the count read
// (pv/emulate.cc).
unsigned guest_fetch(Vcpu& v, uint64_t rip, uint8_t* b, unsigned n);

} // namespace pvmmu::x86
