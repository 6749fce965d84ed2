// A vCPU's GDT and LDT entries in this CPU's descriptor tables (descriptors.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// This CPU's guest GDT entries all null and its LDT empty again: vCPU v
// starts with none, and this CPU's copies are its domain's from now on.
void guest_gdt_reset(Vcpu& v);

// MMUEXT_SET_LDT on bare metal (BareMetal::set_ldt, pv/descriptors.cc).
int guest_set_ldt(Vcpu& v, Vaddr base, uint32_t ents);

} // namespace pvmmu::x86
