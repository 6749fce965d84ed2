// What pvmmu-hv takes from its Multiboot 1 loader (Multiboot Specification
// 0.6.96, §3.3 "Boot information format"): the BIOS memory map, the command
// line and where the loader's own structures lie. Parsed once, copied into a
// BootInfo, before anything may overwrite the loader's memory.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

// Memory map entry types (the BIOS E820 types Multiboot passes through).
enum class MemType : uint32_t { Usable = 1, Reserved = 2, AcpiReclaimable = 3, AcpiNvs = 4, Bad = 5 };
const char* mem_type_name(uint32_t type);

struct MemRegion {
    uint64_t base = 0;
    uint64_t len = 0;
    uint32_t type = 0;
    uint64_t end() const { return base + len; }
    bool usable() const { return type == uint32_t(MemType::Usable); }
};

struct BootInfo {
    static constexpr unsigned kMaxRegions = 64;
    MemRegion regions[kMaxRegions] = {};
    unsigned nr_regions = 0;
    char cmdline[256] = {};
    uint32_t nr_modules = 0;
    // The first kMaxModules modules (guest kernels), physical [start, end).
    static constexpr unsigned kMaxModules = 8;
    struct Module {
        uint64_t start = 0, end = 0;
        char cmdline[128] = {};   // the module's string: "path key=value ..."
    } modules[kMaxModules] = {};
    // The end of every byte the loader handed over that must survive boot:
    // the image with its bss, the info structure, command line and modules.
    uint64_t loader_end = 0;
    uint64_t ram_top = 0;     // end of the highest usable region
    bool multiboot2 = false;  // the loader was a Multiboot 2 one (GRUB's multiboot2)
    uint64_t usable_bytes = 0;
};

// 0, or -1 when the loader passed no memory map (flags bit 6), which leaves
// the hypervisor nothing to manage.
// `magic`: EAX at entry, MB1_BOOT_MAGIC or MB2_BOOT_MAGIC (boot_defs.h).
int multiboot_parse(uint32_t info_phys, uint32_t magic, BootInfo& out);
void memory_map_print(const BootInfo& bi);

// True when `key` appears as a word of the command line ("key" or "key=...").
bool cmdline_has(const BootInfo& bi, const char* key);

// The decimal value of "key=N" (at most 18 digits) in a command line (the
// hypervisor's, or a module's string); false, out unchanged, when the key is
// absent or its value is not such a number.
bool cmdline_uint(const char* cmdline, const char* key, uint64_t& out);

} // namespace pvmmu::x86
