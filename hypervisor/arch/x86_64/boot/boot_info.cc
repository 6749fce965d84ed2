// Building the one BootInfo both Multiboot parsers fill (boot/multiboot.h): the
// same rules for the command line, memory regions, modules and the end of
// what the loader left, whichever protocol booted. Plain C++ with no access
// to machine memory, so the host tests link it too.
#include <string.h>

#include "boot/multiboot.h"
#include "mm/direct_map.h"

namespace pvmmu::x86 {

namespace {

// Copies at most `max` bytes of `s`, up to its first NUL, into dst[n], cut.
void copy_string(char* dst, uint64_t n, const char* s, uint64_t max)
{
    uint64_t len = 0;
    while (len < max && len + 1 < n && s[len]) ++len;
    memcpy(dst, s, len);
    dst[len] = 0;
}

uint64_t max(uint64_t a, uint64_t b) { return a > b ? a : b; }

} // namespace

void boot_info_set_cmdline(BootInfo& bi, const char* s, uint64_t max_len)
{
    copy_string(bi.cmdline, sizeof(bi.cmdline), s, max_len);
}

void boot_info_set_loader(BootInfo& bi, const char* s, uint64_t max_len)
{
    copy_string(bi.loader, sizeof(bi.loader), s, max_len);
}

const char* boot_info_add_region(BootInfo& bi, uint64_t base, uint64_t len, uint32_t type)
{
    if (base + len < base) return "a memory map entry wraps around the address space";
    if (len == 0 || bi.nr_regions == BootInfo::kMaxRegions) return nullptr;
    MemRegion& r = bi.regions[bi.nr_regions++];
    r = MemRegion{base, len, type};
    if (r.usable()) {
        bi.ram_top = max(bi.ram_top, r.end());
        bi.usable_bytes += r.len;
    }
    return nullptr;
}

const char* boot_info_add_module(BootInfo& bi, uint64_t start, uint64_t end, const char* s, uint64_t max_len)
{
    if (end < start) return "a module ends before it starts";
    // Guest kernels are read after boot, so they must survive the boot
    // allocator, which only works inside the boot window.
    if (end > kBootWindow) return "a module lies above the first GiB (the boot page tables' window)";
    boot_info_keep(bi, start, end - start);
    if (bi.nr_modules < BootInfo::kMaxModules) {
        BootInfo::Module& m = bi.modules[bi.nr_modules];
        m.start = start;
        m.end = end;
        copy_string(m.cmdline, sizeof(m.cmdline), s, max_len);
    }
    ++bi.nr_modules;
    return nullptr;
}

void boot_info_keep(BootInfo& bi, uint64_t addr, uint64_t len) { bi.loader_end = max(bi.loader_end, addr + len); }

const char* boot_info_finish(BootInfo& bi)
{
    bi.loader_end = (bi.loader_end + kPageSize - 1) & ~(kPageSize - 1);
    return bi.usable_bytes ? nullptr : "the memory map has no usable RAM";
}

} // namespace pvmmu::x86
