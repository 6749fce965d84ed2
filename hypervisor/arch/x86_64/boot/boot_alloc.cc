// The boot allocator; see boot/boot_alloc.h. Single-threaded: it runs on the
// boot CPU before the application processors start, and closes before then.
#include "boot/boot_alloc.h"

#include <string.h>

#include "boot/exit.h"
#include "mm/direct_map.h"

namespace pvmmu::x86 {

namespace {

const BootInfo* g_bi = nullptr;
uint64_t g_next = 0;       // next free byte (page aligned)
uint64_t g_limit = 0;
bool g_closed = false;

uint64_t page_up(uint64_t a) { return (a + kPageSize - 1) & ~(kPageSize - 1); }

// The lowest usable range at or above `from` that can hold `bytes`; 0 if none.
uint64_t find(uint64_t from, uint64_t bytes)
{
    uint64_t best = 0;
    for (unsigned i = 0; i < g_bi->nr_regions; ++i) {
        const MemRegion& r = g_bi->regions[i];
        if (!r.usable()) continue;
        const uint64_t start = page_up(r.base > from ? r.base : from);
        const uint64_t end = r.end() & ~(kPageSize - 1);
        if (start >= end || end - start < bytes || start + bytes > g_limit) continue;
        if (!best || start < best) best = start;
    }
    return best;
}

} // namespace

void boot_alloc_init(const BootInfo& bi)
{
    g_bi = &bi;
    // Never below 1 MiB: real-mode structures, the AP trampoline and the
    // loader's info live there.
    g_next = page_up(bi.loader_end > 0x100000 ? bi.loader_end : 0x100000);
    g_limit = ~0ull;
}

void boot_alloc_set_limit(uint64_t limit) { g_limit = limit; }

Maddr boot_alloc(uint64_t bytes)
{
    if (g_closed) panic("boot allocator used after the frame table took over");
    bytes = page_up(bytes ? bytes : 1);
    const uint64_t at = find(g_next, bytes);
    if (!at) panic("out of boot memory (%lu bytes wanted above 0x%lx)", bytes, g_next);
    g_next = at + bytes;
    memset(dmap(Maddr{at}), 0, bytes);
    return Maddr{at};
}

uint64_t boot_alloc_end() { return g_next; }

void boot_alloc_close() { g_closed = true; }

} // namespace pvmmu::x86
