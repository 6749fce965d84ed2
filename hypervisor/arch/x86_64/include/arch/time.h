// Guest time (docs/abi.md §10 "Time"): the TSC's frequency, measured once at
// boot against the PIT, and each vCPU's vcpu_time_info in shared_info, which
// Xen PV guests turn into nanoseconds since boot.
#pragma once

#include <stdint.h>

#include <xen/xen.h>

namespace pvmmu::x86 {

// Measures the TSC against a PIT delay (pit.h) and takes the boot's time 0.
// Once, on the boot CPU, before any guest runs; the TSCs of all CPUs are
// assumed to tick together (an invariant TSC, as QEMU's CPUs have).
void time_init();

uint64_t tsc_hz();

// Writes the calling CPU's TSC reading into `t` (Xen's vcpu_time_info) with
// the system time it stands for and the TSC-to-nanoseconds scale, under the
// version protocol (odd while it changes).
void time_publish(vcpu_time_info& t);

} // namespace pvmmu::x86
