// What pvmmu-hv takes from its Multiboot 1 loader (Multiboot Specification
// 0.6.96, §3.3 "Boot information format") or its Multiboot 2 loader
// (Multiboot2 Specification 2.0, §3.6): the BIOS memory map, the command line,
// the modules and where the loader's own structures lie. Parsed once, copied
// into one BootInfo, whichever protocol booted, before anything may overwrite
// the loader's memory; nothing after boot_info_parse knows the protocol.
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
    const char* protocol = "";   // "Multiboot 1" or "Multiboot 2"
    char loader[48] = {};        // the boot loader's name, when it gives one
    uint32_t nr_modules = 0;
    // The first kMaxModules modules (guest kernels), physical [start, end).
    static constexpr unsigned kMaxModules = 8;
    struct Module {
        uint64_t start = 0, end = 0;
        // The module's string: "path key=value ..." from QEMU's -initrd,
        // "name key=value ..." from GRUB's module2 line (a benchmark's
        // arguments among them: room for a long path and many words).
        char cmdline[512] = {};
    } modules[kMaxModules] = {};
    // The end of every byte the loader handed over that must survive boot:
    // the image with its bss and the modules (with Multiboot 1 also its info
    // structure and command line, where QEMU puts them).
    uint64_t loader_end = 0;
    uint64_t ram_top = 0;     // end of the highest usable region
    uint64_t usable_bytes = 0;
};

// Fills `out` from the boot information at `info_phys` that a loader passed
// with `magic` in %eax (MB1_BOOT_MAGIC or MB2_BOOT_MAGIC). nullptr, or why the
// information is unusable: malformed, out of reach of the boot tables, or
// without a memory map (which leaves the hypervisor nothing to manage).
const char* boot_info_parse(uint32_t magic, uint32_t info_phys, BootInfo& out);
void memory_map_print(const BootInfo& bi);

// True when `key` appears as a word of the command line ("key" or "key=...").
bool cmdline_has(const BootInfo& bi, const char* key);

// True when `word` appears alone, with no "=value", as a word of a command
// line (a module's string: the unsafe-native-pt switch).
bool cmdline_word(const char* cmdline, const char* word);

// The value of "key=N", decimal or 0x-hex (at most 18 characters), in a
// command line (the hypervisor's, or a module's string): Ok and `out` set;
// Absent, or Malformed (the value is not such a number), `out` unchanged.
enum class CmdlineUint : uint8_t { Absent, Ok, Malformed };
CmdlineUint cmdline_uint(const char* cmdline, const char* key, uint64_t& out);

// The pieces both parsers build a BootInfo from (boot/boot_info.cc), so the two
// protocols fill it by the same rules. Each returns nullptr or why not.
// The command line from `s`, at most `max` bytes, cut at the first NUL.
void boot_info_set_cmdline(BootInfo& bi, const char* s, uint64_t max);
void boot_info_set_loader(BootInfo& bi, const char* s, uint64_t max);
// A memory map entry; empty ones are dropped, and those past kMaxRegions.
const char* boot_info_add_region(BootInfo& bi, uint64_t base, uint64_t len, uint32_t type);
// Module `bi.nr_modules` at physical [start, end), with its string (at most
// `max` bytes of `s`): it must lie in the boot window, and the boot allocator
// starts above it.
const char* boot_info_add_module(BootInfo& bi, uint64_t start, uint64_t end, const char* s, uint64_t max);
// Keeps the boot allocator above [addr, addr + len).
void boot_info_keep(BootInfo& bi, uint64_t addr, uint64_t len);
// After the last entry: page-aligns loader_end; a map with no usable RAM fails.
const char* boot_info_finish(BootInfo& bi);

// The Multiboot 2 tags at `mbi` (boot/multiboot2.cc), of which `avail` bytes may be
// read, into `bi`. Plain C++ over a byte buffer, so host tests run it on
// malformed input (tests/arch/).
const char* multiboot2_parse(const uint8_t* mbi, uint64_t avail, BootInfo& bi);

} // namespace pvmmu::x86
