// Guest time (docs/abi.md §10 "Time"): the TSC's frequency, measured once at
// boot against the PIT, and each vCPU's vcpu_time_info in shared_info, which
// Xen PV guests turn into nanoseconds since boot.
#pragma once

#include <stdint.h>

#include <xen/xen.h>

namespace pvmmu::x86 {

// Measures the TSC against one PIT delay (cpu/pit.h) and takes the boot's time 0.
// Once, on the boot CPU, before any guest runs; the TSCs of all CPUs are
// assumed to tick together (an invariant TSC, as QEMU's CPUs have).
void time_init();

uint64_t tsc_hz();

// Busy-waits `us` microseconds on the TSC (after time_init). Reading the TSC
// leaves the CPU under KVM, where each PIT port access is an exit to the
// host; SMP start-up's waits (boot/smp.cc) use this, the PIT only calibrates.
void tsc_delay_us(uint64_t us);

// TSC ticks as microseconds (after time_init).
uint64_t tsc_to_us(uint64_t ticks);

// Once, on the first call: "boot time: EVENT N us after reset, M us after
// the hypervisor's entry (TSC)". From reset assumes the TSC counted from 0 at
// reset, as it does on a machine that was powered on and under QEMU, KVM and
// Bochs; the hypervisor's entry is boot/boot32.S's first TSC reading.
void boot_time_report(const char* event);

// Writes the calling CPU's TSC reading into `t` (Xen's vcpu_time_info) with
// the system time it stands for and the TSC-to-nanoseconds scale, under the
// version protocol (odd while it changes).
void time_publish(vcpu_time_info& t);

// The guests' system time now (nanoseconds since time_init, the clock
// time_publish describes): runstate times (pv/runstate.cc).
uint64_t system_time_now();

// The TSC value at which system_time_now() reaches `ns` (rounded up), for
// the timer (cpu/lapic.h); 0 for kNever-like times past the TSC's range.
uint64_t tsc_at(uint64_t ns);

} // namespace pvmmu::x86
