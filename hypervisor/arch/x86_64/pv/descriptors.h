// A vCPU's GDT and LDT entries in this CPU's descriptor tables (descriptors.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// This CPU's guest GDT entries all null and its LDT empty again: vCPU v
// starts with none, and this CPU's copies are its domain's from now on.
void guest_gdt_reset(Vcpu& v);

// VCPUOP_initialise's gdt_frames and gdt_ents for a vCPU of d, checked as
// set_gdt checks them (at most FIRST_RESERVED_GDT_ENTRY entries; frames of d,
// no page table, valid descriptors), nothing copied yet: 0 or -EINVAL.
long guest_gdt_check(const Domain& d, const xen_pfn_t* frames, uint32_t entries);

// On v's CPU as it starts (after guest_gdt_reset): the GDT its context gave
// (VcpuArch::start_gdt), copied and loaded as set_gdt would.
void guest_gdt_start(Vcpu& v);

// MMUEXT_SET_LDT on bare metal (BareMetal::set_ldt, pv/descriptors.cc).
int guest_set_ldt(Vcpu& v, Vaddr base, uint32_t ents);

} // namespace pvmmu::x86
