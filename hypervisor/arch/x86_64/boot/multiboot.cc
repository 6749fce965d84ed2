// Multiboot 1 boot information (spec §3.3) → BootInfo, and the choice between
// the two protocols by the magic the loader left in %eax. The loader's
// structures are read through the boot window of the direct map (the first
// GiB; QEMU puts them below 1 MiB and right after the image) and copied, so
// nothing later depends on the loader's memory.
#include "boot/multiboot.h"

#include <string.h>

#include "boot/boot_defs.h"
#include "lib/console.h"
#include "mm/direct_map.h"

extern "C" char __hv_bss_end[];

namespace pvmmu::x86 {

namespace {

// The fields of the info structure this file reads (spec §3.3 offsets 0-67).
struct __attribute__((packed)) Mb1Info {
    uint32_t flags;
    uint32_t mem_lower, mem_upper;   // flags bit 0
    uint32_t boot_device;            // bit 1
    uint32_t cmdline;                // bit 2
    uint32_t mods_count, mods_addr;  // bit 3
    uint32_t syms[4];                // bit 4 or 5
    uint32_t mmap_length, mmap_addr; // bit 6
    uint32_t drives_length, drives_addr; // bit 7
    uint32_t config_table;           // bit 8
    uint32_t boot_loader_name;       // bit 9
};
static_assert(__builtin_offsetof(Mb1Info, mmap_length) == 44);
static_assert(__builtin_offsetof(Mb1Info, boot_loader_name) == 64);

struct __attribute__((packed)) Mb1Module {
    uint32_t mod_start, mod_end, string, reserved;
};

// A memory map entry; `size` does not count itself, entries are size + 4 apart.
struct __attribute__((packed)) Mb1MmapEntry {
    uint32_t size;
    uint64_t base_addr, length;
    uint32_t type;
};

constexpr uint32_t kHasCmdline = 1u << 2, kHasModules = 1u << 3, kHasMmap = 1u << 6,
                   kHasLoaderName = 1u << 9;

bool in_window(uint64_t addr, uint64_t len) { return addr + len >= addr && addr + len <= kBootWindow; }

// A string of the loader's, at most `max` bytes of it: how much may be read.
uint64_t window_left(uint64_t addr, uint64_t max)
{
    return addr >= kBootWindow ? 0 : (kBootWindow - addr < max ? kBootWindow - addr : max);
}

const char* multiboot1_parse(uint32_t info_phys, BootInfo& bi)
{
    bi.protocol = "Multiboot 1";
    if (!in_window(info_phys, sizeof(Mb1Info))) return "the information structure is out of reach";
    const Mb1Info& mbi = *dmap<const Mb1Info>(Maddr{info_phys});
    boot_info_keep(bi, info_phys, sizeof(Mb1Info));

    if (mbi.flags & kHasCmdline) {
        boot_info_set_cmdline(bi, dmap<const char>(Maddr{mbi.cmdline}), window_left(mbi.cmdline, sizeof(bi.cmdline)));
        boot_info_keep(bi, mbi.cmdline, strlen(bi.cmdline) + 1);
    }
    if (mbi.flags & kHasLoaderName)
        boot_info_set_loader(bi, dmap<const char>(Maddr{mbi.boot_loader_name}),
                             window_left(mbi.boot_loader_name, sizeof(bi.loader)));
    if (mbi.flags & kHasModules) {
        const uint64_t bytes = uint64_t(mbi.mods_count) * sizeof(Mb1Module);
        if (!in_window(mbi.mods_addr, bytes)) return "the module list is out of reach";
        const Mb1Module* m = dmap<const Mb1Module>(Maddr{mbi.mods_addr});
        boot_info_keep(bi, mbi.mods_addr, bytes);
        for (uint32_t i = 0; i < mbi.mods_count; ++i) {
            const char* string = m[i].string ? dmap<const char>(Maddr{m[i].string}) : "";
            const uint64_t readable = m[i].string ? window_left(m[i].string, sizeof(BootInfo::Module::cmdline)) : 0;
            if (const char* why = boot_info_add_module(bi, m[i].mod_start, m[i].mod_end, string, readable))
                return why;
        }
    }
    if (!(mbi.flags & kHasMmap)) return "no memory map";
    if (!in_window(mbi.mmap_addr, mbi.mmap_length)) return "the memory map is out of reach";
    boot_info_keep(bi, mbi.mmap_addr, mbi.mmap_length);

    const uint8_t* p = dmap<const uint8_t>(Maddr{mbi.mmap_addr});
    for (uint64_t off = 0; off + sizeof(Mb1MmapEntry) <= mbi.mmap_length;) {
        const Mb1MmapEntry& e = *reinterpret_cast<const Mb1MmapEntry*>(p + off);
        if (e.size < sizeof(Mb1MmapEntry) - 4) return "a memory map entry's size is below 20";
        if (const char* why = boot_info_add_region(bi, e.base_addr, e.length, e.type)) return why;
        off += uint64_t(e.size) + 4;
    }
    return boot_info_finish(bi);
}

} // namespace

const char* boot_info_parse(uint32_t magic, uint32_t info_phys, BootInfo& bi)
{
    bi.loader_end = image_phys(__hv_bss_end).v;
    if (magic == MB1_BOOT_MAGIC) return multiboot1_parse(info_phys, bi);
    // Multiboot2 §3.6.2: the structure is 8-byte aligned. Only the boot window
    // is mapped yet; everything needed is copied, so the structure itself
    // need not survive (§3.6.1: the loader may put it anywhere).
    bi.protocol = "Multiboot 2";
    if (info_phys % 8) return "the information structure is not 8-byte aligned";
    if (info_phys >= kBootWindow) return "the information structure is out of reach";
    return multiboot2_parse(dmap<const uint8_t>(Maddr{info_phys}), kBootWindow - info_phys, bi);
}

const char* mem_type_name(uint32_t type)
{
    switch (MemType(type)) {
    case MemType::Usable: return "usable";
    case MemType::Reserved: return "reserved";
    case MemType::AcpiReclaimable: return "ACPI data";
    case MemType::AcpiNvs: return "ACPI NVS";
    case MemType::Bad: return "bad";
    }
    return "unknown";
}

void memory_map_print(const BootInfo& bi)
{
    printk("memory map (multiboot, %u entries):\n", bi.nr_regions);
    for (unsigned i = 0; i < bi.nr_regions; ++i) {
        const MemRegion& r = bi.regions[i];
        printk("  [%016lx-%016lx] %s\n", r.base, r.end() - 1, mem_type_name(r.type));
    }
    printk("memory: %lu MiB usable, top of RAM 0x%lx\n", bi.usable_bytes >> 20, bi.ram_top);
}

namespace {

// The word "key" or "key=value" of the command line; value (or "") in *val.
bool cmdline_find(const char* cmdline, const char* key, const char** val, size_t* vlen)
{
    const size_t klen = strlen(key);
    for (const char* p = cmdline; *p;) {
        while (*p == ' ') ++p;
        const char* w = p;
        while (*p && *p != ' ') ++p;
        const size_t n = size_t(p - w);
        if (n >= klen && memcmp(w, key, klen) == 0 && (n == klen || w[klen] == '=')) {
            *val = n == klen ? w + n : w + klen + 1;
            *vlen = n == klen ? 0 : n - klen - 1;
            return true;
        }
    }
    return false;
}

} // namespace

bool cmdline_has(const BootInfo& bi, const char* key)
{
    const char* v;
    size_t n;
    return cmdline_find(bi.cmdline, key, &v, &n);
}

bool cmdline_word(const char* cmdline, const char* word)
{
    const char* v;
    size_t n;
    return cmdline_find(cmdline, word, &v, &n) && n == 0 && v[-1] != '=';
}

CmdlineUint cmdline_uint(const char* cmdline, const char* key, uint64_t& out)
{
    const char* v;
    size_t n;
    if (!cmdline_find(cmdline, key, &v, &n)) return CmdlineUint::Absent;
    if (n == 0 || n > 18) return CmdlineUint::Malformed;
    const bool hex = n > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X');
    uint64_t x = 0;
    for (size_t i = hex ? 2 : 0; i < n; ++i) {
        const char c = v[i];
        const unsigned d = c >= '0' && c <= '9'          ? unsigned(c - '0')
                           : hex && c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                           : hex && c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10)
                                                         : 16;
        if (d >= (hex ? 16u : 10u)) return CmdlineUint::Malformed;
        x = x * (hex ? 16 : 10) + d;
    }
    out = x;
    return CmdlineUint::Ok;
}

} // namespace pvmmu::x86
