// The CPUs of the machine, from ACPI's MADT ("Multiple APIC Description
// Table", ACPI 6.x §5.2.12): found through the RSDP in the BIOS areas
// (§5.2.5.1), the RSDT or XSDT. Read through the direct map.
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

} // namespace pvmmu::x86
