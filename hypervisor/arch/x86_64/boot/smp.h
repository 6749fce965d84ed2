// Starting the application processors: INIT-SIPI-SIPI to each CPU the MADT
// lists ("MP Initialization Protocol Algorithm", SDM Vol. 3A), one at a time,
// through the real-mode trampoline (boot/trampoline.S) at HV_TRAMPOLINE_PHYS.
#pragma once

#include <stdint.h>

#include "boot/acpi.h"
#include "cpu/percpu.h"

// ap_entry64 (boot/entry64.S) takes each AP's stack from here, by APIC ID.
extern "C" uint64_t ap_stack_tops[256];

namespace pvmmu::x86 {

// On the boot CPU, once every CPU's area is built: starts CPUs 1..g_nr_cpus-1
// and returns how many came online (the boot CPU included).
unsigned smp_boot();

// On each CPU as it comes online: records its control registers for the
// invariant check, marks it online (here and in the core) and announces it.
void cpu_online(PerCpu& c, const char* note);

} // namespace pvmmu::x86
