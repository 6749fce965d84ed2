// Building the hypervisor's page tables; see mm/paging.h and docs/boot.md.
#include "mm/paging.h"

#include "boot/boot_alloc.h"
#include "boot/exit.h"
#include "cpu/cpu_bits.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/direct_map.h"

extern "C" char __hv_text_start[], __hv_text_end[], __hv_rodata_start[], __hv_rodata_end[];
extern "C" char __hv_data_start[], __hv_bss_end[];

namespace pvmmu::x86 {

// boot/boot32.S builds its tables with these values.
static_assert(PTE_P == pte_bit::P && PTE_RW == pte_bit::RW && PTE_PS == pte_bit::PS);

namespace {

Maddr g_root{0};

// Entries that link a lower table: the leaf decides the permissions.
constexpr uint64_t kLink = pte_bit::P | pte_bit::RW | pte_bit::A;
constexpr uint64_t k2M = 1ull << 21;

uint64_t* table(Maddr a) { return dmap<uint64_t>(a); }

// The table `level - 1` below entry `index` of `t`, allocated when missing.
uint64_t* next_table(uint64_t* t, unsigned index)
{
    Pte e{t[index]};
    if (!e.present()) {
        const Maddr m = boot_alloc_frame();
        t[index] = m.v | kLink;
        return table(m);
    }
    if (e.v & pte_bit::PS) panic("map over a large page (entry 0x%lx)", e.v);
    return table(maddr_of(e.mfn()));
}

void map_2m(Vaddr va, Maddr pa, uint64_t flags)
{
    uint64_t* l3 = next_table(table(g_root), table_index(va, Level::L4));
    uint64_t* l2 = next_table(l3, table_index(va, Level::L3));
    l2[table_index(va, Level::L2)] = pa.v | flags | pte_bit::PS;
}

void map_range(uint64_t va, uint64_t end, uint64_t flags)
{
    for (; va < end; va += kPageSize) map_page(Vaddr{va}, Maddr{va - HV_IMAGE_VIRT}, flags);
}

bool overlaps_ram(const BootInfo& bi, uint64_t base, uint64_t len)
{
    for (unsigned i = 0; i < bi.nr_regions; ++i) {
        const MemRegion& r = bi.regions[i];
        if (r.usable() && r.base < base + len && base < r.end()) return true;
    }
    return false;
}

} // namespace

Maddr hv_root() { return g_root; }

void map_page(Vaddr va, Maddr pa, uint64_t flags)
{
    uint64_t* l3 = next_table(table(g_root), table_index(va, Level::L4));
    uint64_t* l2 = next_table(l3, table_index(va, Level::L3));
    uint64_t* l1 = next_table(l2, table_index(va, Level::L2));
    l1[table_index(va, Level::L1)] = pa.v | flags;
}

void paging_build(const BootInfo& bi)
{
    // Allocations come from the boot window: tables are written through it.
    boot_alloc_set_limit(kBootWindow);
    g_root = boot_alloc_frame();

    // The image, section by section (hv.ld.S aligns each to a page). The
    // .boot section is not mapped: it ran before paging and is done.
    const auto va = [](const char* p) { return reinterpret_cast<uint64_t>(p); };
    map_range(va(__hv_text_start), va(__hv_text_end), hv_pte::kText);
    map_range(va(__hv_rodata_start), va(__hv_rodata_end), hv_pte::kRodata);
    map_range(va(__hv_data_start), va(__hv_bss_end), hv_pte::kData);

    // The direct map, 2 MiB pages: RAM write-back; what holds no RAM below
    // 4 GiB (MMIO: the local APIC, ACPI tables in reserved ranges) uncached.
    const uint64_t top = bi.ram_top > (4ull << 30) ? bi.ram_top : (4ull << 30);
    for (uint64_t pa = 0; pa < top; pa += k2M) {
        const uint64_t cache = overlaps_ram(bi, pa, k2M) ? 0 : hv_pte::kUncached;
        map_2m(Vaddr{HV_DIRECTMAP_VIRT + pa}, Maddr{pa}, hv_pte::kData | cache);
    }

    // The trampoline page at its physical address, read-only and executable:
    // an AP turns paging on while running there (boot/trampoline.S).
    map_page(Vaddr{HV_TRAMPOLINE_PHYS}, Maddr{HV_TRAMPOLINE_PHYS}, hv_pte::kText);

    if (g_root.v >= (1ull << 32)) panic("L4 above 4 GiB");
    write_cr3(g_root.v);
    boot_alloc_set_limit(~0ull);
    printk("paging: hypervisor tables at 0x%lx: image 0x%lx-0x%lx (4K pages, W^X), "
           "direct map of 0x%lx bytes at 0x%lx (2M pages)\n",
           g_root.v, va(__hv_text_start), va(__hv_bss_end), top, uint64_t(HV_DIRECTMAP_VIRT));
}

void paging_drop_identity()
{
    table(g_root)[table_index(Vaddr{HV_TRAMPOLINE_PHYS}, Level::L4)] = 0;
}

} // namespace pvmmu::x86
