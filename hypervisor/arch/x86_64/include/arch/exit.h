// Ending a run: the codes of boot_defs.h through QEMU's isa-debug-exit, then a
// halt (on hardware, or a QEMU without the device), so a failed check or an
// exception ends a test run at once instead of hanging it.
#pragma once

#include <stdint.h>

#include "arch/boot_defs.h"

namespace pvmmu::x86 {

[[noreturn]] void hv_exit(uint32_t code);

// Prints "PANIC: cpu N: <message>" and ends with HV_EXIT_PANIC.
[[noreturn]] __attribute__((format(printf, 1, 2))) void panic(const char* fmt, ...);

} // namespace pvmmu::x86
