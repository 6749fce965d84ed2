// The seam between the guest runtime and the platform that runs it. The
// platform defines the rt:: functions of guest/runtime.h that only it can know
// (this_cpu, nr_vcpus, platform_counters, foreign_domain, hypervisor_frame,
// io_frame, deny, hypervisor_install_retries, now_ns, native_pte_cmpxchg) plus
// console_write and platform_arg below, and calls boot_main on vCPU 0 and
// secondary_main on every other vCPU.
#pragma once

#include <stddef.h>

#include "guest/test.h"

namespace pvmmu::guest::rt {

// Platform: write bytes to the console (one whole line per call).
void console_write(const char* s, size_t n);
// Platform: argument word i (`key=value`), nullptr past the last one.
const char* platform_arg(unsigned i);

// Runtime: vCPU 0 brings the library up, runs test_main, prints the result line.
Outcome boot_main(Cpu& c, const BootInfo& bi);
// Runtime: any other vCPU attaches and runs run_on_all work until boot_main ends.
void secondary_main(Cpu& c);

const char* outcome_name(Outcome o);

} // namespace pvmmu::guest::rt
