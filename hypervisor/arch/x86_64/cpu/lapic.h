// The local APIC in xAPIC mode ("Advanced Programmable Interrupt Controller
// (APIC)", SDM Vol. 3A): memory-mapped registers at the address IA32_APIC_BASE
// names, reached through the direct map (uncached there, mm/paging.cc).
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

// This CPU: global enable (IA32_APIC_BASE bit 11), software enable with the
// spurious vector (SVR), accept every priority (TPR 0). Panics if firmware
// left the APIC in x2APIC mode, which this driver does not speak yet.
void lapic_init();

// The legacy 8259 PICs: every line masked (interrupts come through the APICs).
void pic_mask_all();

uint32_t lapic_id();        // this CPU's APIC ID (ID register bits 31:24)
void lapic_eoi();

// Interrupt command register writes; each waits until the APIC has sent the
// previous one (delivery status clear).
void lapic_send_init(uint32_t apic_id);
void lapic_send_startup(uint32_t apic_id, uint8_t page);   // start at page << 12
void lapic_send_fixed(uint32_t apic_id, uint8_t vector);

} // namespace pvmmu::x86
