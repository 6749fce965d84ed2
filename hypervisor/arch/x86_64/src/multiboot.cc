// Multiboot 1 boot information (spec §3.3) → BootInfo. The loader's structures
// are read through the boot window of the direct map (the first GiB; QEMU puts
// them below 1 MiB and right after the image) and copied, so nothing later
// depends on the loader's memory.
#include "arch/multiboot.h"

#include <string.h>

#include "arch/console.h"
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

int multiboot_parse(uint32_t info_phys, BootInfo& bi)
{
    bi.loader_end = image_phys(__hv_bss_end).v;
    if (!in_window(info_phys, sizeof(Mb1Info))) return -1;
    const Mb1Info& mbi = *dmap<const Mb1Info>(Maddr{info_phys});
    keep(bi, info_phys, sizeof(Mb1Info));

    if ((mbi.flags & kHasCmdline) && in_window(mbi.cmdline, sizeof(bi.cmdline))) {
        const char* s = dmap<const char>(Maddr{mbi.cmdline});
        size_t n = 0;
        while (n + 1 < sizeof(bi.cmdline) && s[n]) ++n;
        memcpy(bi.cmdline, s, n);
        bi.cmdline[n] = 0;
        keep(bi, mbi.cmdline, n + 1);
    }
    if ((mbi.flags & kHasModules) && in_window(mbi.mods_addr, uint64_t(mbi.mods_count) * sizeof(Mb1Module))) {
        // Modules (guest kernels, later) must survive the boot allocator.
        bi.nr_modules = mbi.mods_count;
        const Mb1Module* m = dmap<const Mb1Module>(Maddr{mbi.mods_addr});
        keep(bi, mbi.mods_addr, uint64_t(mbi.mods_count) * sizeof(Mb1Module));
        for (uint32_t i = 0; i < mbi.mods_count; ++i) {
            if (m[i].mod_end < m[i].mod_start || !in_window(m[i].mod_start, m[i].mod_end - m[i].mod_start))
                continue;   // unreadable: not a module the hypervisor will use
            keep(bi, m[i].mod_start, m[i].mod_end - m[i].mod_start);
            if (i >= BootInfo::kMaxModules) continue;
            BootInfo::Module& mod = bi.modules[i];
            mod.start = m[i].mod_start;
            mod.end = m[i].mod_end;
            if (m[i].string && in_window(m[i].string, sizeof(mod.cmdline))) {
                const char* s = dmap<const char>(Maddr{m[i].string});
                for (size_t k = 0; k + 1 < sizeof(mod.cmdline) && s[k]; ++k) mod.cmdline[k] = s[k];
            }
        }
    }
    if (!(mbi.flags & kHasMmap) || !in_window(mbi.mmap_addr, mbi.mmap_length)) return -1;
    keep(bi, mbi.mmap_addr, mbi.mmap_length);

    const uint8_t* p = dmap<const uint8_t>(Maddr{mbi.mmap_addr});
    for (uint32_t off = 0; off + sizeof(Mb1MmapEntry) <= mbi.mmap_length;) {
        const Mb1MmapEntry& e = *reinterpret_cast<const Mb1MmapEntry*>(p + off);
        if (bi.nr_regions == BootInfo::kMaxRegions) break;
        if (e.length) {
            MemRegion& r = bi.regions[bi.nr_regions++];
            r = MemRegion{e.base_addr, e.length, e.type};
            if (r.usable()) {
                bi.ram_top = max(bi.ram_top, r.end());
                bi.usable_bytes += r.len;
            }
        }
        off += e.size + 4;
    }
    bi.loader_end = (bi.loader_end + kPageSize - 1) & ~(kPageSize - 1);
    return bi.nr_regions ? 0 : -1;
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
