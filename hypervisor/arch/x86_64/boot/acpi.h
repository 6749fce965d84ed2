// The CPUs of the machine, from ACPI's MADT ("Multiple APIC Description
// Table", ACPI 6.x §5.2.12): found through the RSDP in the BIOS areas
// (§5.2.5.1), the RSDT or XSDT. Read through the direct map. And how to end
// the machine so its host sees how (boot/exit.h): the FADT's PM1 control
// ports with the DSDT's \_S5 values (soft-off, §7.4.2, §16.1.8), and QEMU's
// pvpanic device.
#pragma once

#include <stdint.h>

#include "core/types.h"

namespace pvmmu::x86 {

struct CpuList {
    uint32_t apic_ids[kMaxCpus] = {};
    unsigned count = 0;
    unsigned ignored = 0;       // enabled CPUs beyond kMaxCpus or x2APIC-only entries
    uint64_t lapic_phys = 0;    // as the MADT reports it
    uint64_t rsdp = 0;
};

// 0, or -1 when there is no RSDP or no MADT (then only the boot CPU runs).
int acpi_find_cpus(CpuList& out);

// pvpanic's port where no ACPI table names it (QEMU's default for -device pvpanic).
constexpr uint16_t kPvpanicDefaultPort = 0x505;

struct PowerInfo {
    uint16_t pm1a_cnt = 0, pm1b_cnt = 0;   // FADT PM1x_CNT_BLK I/O ports (0: none)
    uint16_t smi_cmd = 0;                  // where ACPI_ENABLE is written to enter ACPI mode
    uint8_t acpi_enable = 0;
    bool s5 = false;                       // \_S5 found: slp_typ* are valid
    uint8_t slp_typa = 0, slp_typb = 0;
    bool pvpanic_from_acpi = false;        // else the default port, probed before use
    uint16_t pvpanic_port = kPvpanicDefaultPort;
};

// Fills what the FADT and the DSDT/SSDTs give, from the RSDP found by
// acpi_find_cpus (0: none); leaves the rest as it is.
void acpi_find_power(uint64_t rsdp, PowerInfo& out);

} // namespace pvmmu::x86
