// Multiboot 1 boot information (spec §3.3) → BootInfo. The loader's structures
// are read through the boot window of the direct map (the first GiB; QEMU puts
// them below 1 MiB and right after the image) and copied, so nothing later
// depends on the loader's memory.
#include "arch/multiboot.h"

#include <string.h>

#include "arch/console.h"
#include "arch/boot_defs.h"
#include "arch/direct_map.h"

extern "C" char __hv_bss_end[];

namespace pvmmu::x86 {

namespace {

// The fields of the info structure this file reads (spec §3.3 offsets 0-51).
struct __attribute__((packed)) Mb1Info {
    uint32_t flags;
    uint32_t mem_lower, mem_upper;   // flags bit 0
    uint32_t boot_device;            // bit 1
    uint32_t cmdline;                // bit 2
    uint32_t mods_count, mods_addr;  // bit 3
    uint32_t syms[4];                // bit 4 or 5
    uint32_t mmap_length, mmap_addr; // bit 6
};
static_assert(__builtin_offsetof(Mb1Info, mmap_length) == 44);

struct __attribute__((packed)) Mb1Module {
    uint32_t mod_start, mod_end, string, reserved;
};

// A memory map entry; `size` does not count itself, entries are size + 4 apart.
struct __attribute__((packed)) Mb1MmapEntry {
    uint32_t size;
    uint64_t base_addr, length;
    uint32_t type;
};

constexpr uint32_t kHasCmdline = 1u << 2, kHasModules = 1u << 3, kHasMmap = 1u << 6;

uint64_t max(uint64_t a, uint64_t b) { return a > b ? a : b; }

bool in_window(uint64_t addr, uint64_t len) { return addr + len >= addr && addr + len <= kBootWindow; }

// Keeps `end` above the loader's data at [addr, addr + len).
void keep(BootInfo& bi, uint64_t addr, uint64_t len) { bi.loader_end = max(bi.loader_end, addr + len); }

} // namespace

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

namespace {

// A NUL-terminated string of the loader's, copied into dst (truncated to fit).
void copy_string(BootInfo& bi, uint64_t addr, char* dst, size_t cap)
{
    if (!addr || !in_window(addr, cap)) return;
    const char* s = dmap<const char>(Maddr{addr});
    size_t n = 0;
    while (n + 1 < cap && s[n]) ++n;
    memcpy(dst, s, n);
    dst[n] = 0;
    keep(bi, addr, n + 1);
}

// Module i (a guest kernel): it must survive the boot allocator.
void take_module(BootInfo& bi, uint32_t i, uint64_t start, uint64_t end, uint64_t string)
{
    if (end < start || !in_window(start, end - start)) return;   // unreadable: not used
    keep(bi, start, end - start);
    if (i >= BootInfo::kMaxModules) return;
    BootInfo::Module& mod = bi.modules[i];
    mod.start = start;
    mod.end = end;
    copy_string(bi, string, mod.cmdline, sizeof(mod.cmdline));
}

void take_region(BootInfo& bi, uint64_t base, uint64_t len, uint32_t type)
{
    if (!len || bi.nr_regions == BootInfo::kMaxRegions) return;
    MemRegion& r = bi.regions[bi.nr_regions++];
    r = MemRegion{base, len, type};
    if (r.usable()) {
        bi.ram_top = max(bi.ram_top, r.end());
        bi.usable_bytes += r.len;
    }
}

int parse_mb1(uint32_t info_phys, BootInfo& bi)
{
    if (!in_window(info_phys, sizeof(Mb1Info))) return -1;
    const Mb1Info& mbi = *dmap<const Mb1Info>(Maddr{info_phys});
    keep(bi, info_phys, sizeof(Mb1Info));
    if (mbi.flags & kHasCmdline) copy_string(bi, mbi.cmdline, bi.cmdline, sizeof(bi.cmdline));
    if ((mbi.flags & kHasModules) && in_window(mbi.mods_addr, uint64_t(mbi.mods_count) * sizeof(Mb1Module))) {
        bi.nr_modules = mbi.mods_count;
        const Mb1Module* m = dmap<const Mb1Module>(Maddr{mbi.mods_addr});
        keep(bi, mbi.mods_addr, uint64_t(mbi.mods_count) * sizeof(Mb1Module));
        for (uint32_t i = 0; i < mbi.mods_count; ++i) take_module(bi, i, m[i].mod_start, m[i].mod_end, m[i].string);
    }
    if (!(mbi.flags & kHasMmap) || !in_window(mbi.mmap_addr, mbi.mmap_length)) return -1;
    keep(bi, mbi.mmap_addr, mbi.mmap_length);
    const uint8_t* p = dmap<const uint8_t>(Maddr{mbi.mmap_addr});
    for (uint32_t off = 0; off + sizeof(Mb1MmapEntry) <= mbi.mmap_length;) {
        const Mb1MmapEntry& e = *reinterpret_cast<const Mb1MmapEntry*>(p + off);
        take_region(bi, e.base_addr, e.length, e.type);
        off += e.size + 4;
    }
    return 0;
}

// Multiboot 2 boot information (Multiboot2 Specification 2.0, §3.6 "Boot
// information format"): total size, reserved, then tags of (type, size)
// padded to 8 bytes, up to the end tag. Tags read here: 1 command line,
// 3 module, 6 memory map (entries of entry_size bytes: base, length, type).
int parse_mb2(uint32_t info_phys, BootInfo& bi)
{
    if (!in_window(info_phys, 8)) return -1;
    const uint32_t total = *dmap<const uint32_t>(Maddr{info_phys});
    if (total < 16 || !in_window(info_phys, total)) return -1;
    keep(bi, info_phys, total);
    const uint8_t* info = dmap<const uint8_t>(Maddr{info_phys});
    bool mmap = false;
    for (uint32_t off = 8; off + 8 <= total;) {
        uint32_t type, size;
        memcpy(&type, info + off, 4);
        memcpy(&size, info + off + 4, 4);
        if (type == 0 || size < 8 || size > total - off) break;
        const uint8_t* t = info + off;
        if (type == 1) {
            copy_string(bi, info_phys + off + 8, bi.cmdline, sizeof(bi.cmdline));
        } else if (type == 3 && size >= 16) {
            uint32_t start, end;
            memcpy(&start, t + 8, 4);
            memcpy(&end, t + 12, 4);
            take_module(bi, bi.nr_modules++, start, end, info_phys + off + 16);
        } else if (type == 6 && size >= 16) {
            uint32_t esize;
            memcpy(&esize, t + 8, 4);
            for (uint32_t e = 16; esize >= 24 && e + 24 <= size; e += esize) {
                uint64_t base, len;
                uint32_t etype;
                memcpy(&base, t + e, 8);
                memcpy(&len, t + e + 8, 8);
                memcpy(&etype, t + e + 16, 4);
                take_region(bi, base, len, etype);
            }
            mmap = true;
        }
        off += (size + 7) & ~7u;
    }
    return mmap ? 0 : -1;
}

} // namespace

int multiboot_parse(uint32_t info_phys, uint32_t magic, BootInfo& bi)
{
    bi.loader_end = image_phys(__hv_bss_end).v;
    bi.multiboot2 = magic == MB2_BOOT_MAGIC;
    if ((bi.multiboot2 ? parse_mb2(info_phys, bi) : parse_mb1(info_phys, bi)) != 0) return -1;
    bi.loader_end = (bi.loader_end + kPageSize - 1) & ~(kPageSize - 1);
    return bi.nr_regions ? 0 : -1;
}

void memory_map_print(const BootInfo& bi)
{
    printk("memory map (multiboot%s, %u entries):\n", bi.multiboot2 ? "2" : "", bi.nr_regions);
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

bool cmdline_uint(const char* cmdline, const char* key, uint64_t& out)
{
    const char* v;
    size_t n;
    if (!cmdline_find(cmdline, key, &v, &n) || n == 0 || n > 18) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; ++i) {
        if (v[i] < '0' || v[i] > '9') return false;
        x = x * 10 + uint64_t(v[i] - '0');
    }
    out = x;
    return true;
}

} // namespace pvmmu::x86
