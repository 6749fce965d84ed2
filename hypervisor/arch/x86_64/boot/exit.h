// Ending a run: the codes of boot/boot_defs.h through QEMU's isa-debug-exit, so a
// failed check or an exception ends a test run at once instead of hanging it.
// Where the device is missing (a libvirt domain, hardware) the write does
// nothing and the machine ends as its host understands: a panic or a failed
// boot check through pvpanic, any other end by ACPI soft-off (S5); then, or
// where neither is there, a halt. docs/boot.md "Exit codes".
#pragma once

#include <stdint.h>

#include "boot/boot_defs.h"

namespace pvmmu::x86 {

[[noreturn]] void hv_exit(uint32_t code);

// Finds (boot/acpi.h) and prints how hv_exit powers off and reports a panic;
// once at boot, from the RSDP acpi_find_cpus found (0: none).
void exit_find_power(uint64_t rsdp);

// Prints "PANIC: cpu N: <message>" and ends with HV_EXIT_PANIC.
[[noreturn]] __attribute__((format(printf, 1, 2))) void panic(const char* fmt, ...);

} // namespace pvmmu::x86
