// Just enough of ACPI's AML (ACPI 6.x §20, "ACPI Machine Language
// Specification") to power the machine off and to find pvpanic: the
// definition blocks are searched, not interpreted, and every read is bounded
// by the table. Pure functions over bytes, so the host's unit tests feed them
// tables (tests/arch/aml_test.cc).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pvmmu::x86 {

// SLP_TYPa and SLP_TYPb for S5, from the first two elements of the package
// of `Name (\_S5, Package () {...})` (ACPI §7.4.2 "\_Sx (System States)").
// False when no such declaration is found or its elements are not integers
// that fit the 3-bit SLP_TYP field; with one element, b = a.
bool aml_find_s5(const uint8_t* aml, size_t len, uint8_t& slp_typa, uint8_t& slp_typb);

// The I/O port of QEMU's pvpanic device ("QEMU0001", QEMU's
// docs/specs/pvpanic.rst): the first I/O port descriptor (ACPI §6.4.2.5) of
// one byte after its _HID string, within `window` bytes. False: not found.
bool aml_find_pvpanic(const uint8_t* aml, size_t len, uint16_t& port, size_t window = 128);

} // namespace pvmmu::x86
