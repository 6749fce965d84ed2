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

// The local APIC timer ("APIC Timer", SDM Vol. 3A 10.5.4), the clock of the
// vCPUs' deadlines (docs/architecture.md §9): kVectorTimer (cpu/traps.h) at
// a TSC value. TSC-deadline mode where CPUID.01H:ECX[24] says the CPU has
// it (10.5.4.1), else one-shot mode counting the APIC's clock, whose rate
// against the TSC the boot CPU measures once. Disarmed after init. Every
// CPU, after time_init (boot/time.h).
void lapic_timer_init();

// Fires kVectorTimer at (or, in one-shot mode, up to a count's rounding
// near, or when the count would overflow, before) TSC value `tsc`; at once
// when it has passed. 0 disarms. Interrupts off or on: only this CPU's
// timer is touched.
void lapic_timer_arm(uint64_t tsc);

// From kVectorTimer's handler: the timer is disarmed (it fired), so the
// next lapic_timer_arm writes it whatever its deadline.
void lapic_timer_fired();

// "tsc-deadline" or "one-shot", for the boot log.
const char* lapic_timer_mode();

} // namespace pvmmu::x86
