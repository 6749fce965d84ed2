// The domain builder (as Xen's for a PV guest): gives a domain its frames and an
// initial address space that maps every one of them once, at `physmap` +
// gpfn * 4 KiB, its page-table frames read-only; pins the L4 through the normal
// validation path and makes it every vCPU's base pointer. The tables are
// gpfns [first_pt, first_pt + nr_pt_frames): the L4, one L3, the L2s, the L1s.
#pragma once

#include "core/hypervisor.h"

namespace pvmmu {

inline constexpr Vaddr kDefaultPhysmap{0x0000'0080'0000'0000};   // L4 slot 1

struct DomainSpec {
    DomId id = 0;
    unsigned nr_vcpus = 1;
    CpuId first_cpu = 0;         // vCPU i runs on CPU first_cpu + i
    Mfn first{0};                // the domain's frames: [first, first + nr_frames)
    uint64_t nr_frames = 0;
    // 1 GiB aligned, outside the reserved slots, and the domain must end in
    // the same 512 GiB slot.
    Vaddr physmap = kDefaultPhysmap;
    // The gpfn of the first table: 0, or (a kernel linked at the physmap's
    // base) after its image, as Xen places them.
    uint64_t first_pt = 0;
};

// How many frames the builder's tables take for a domain of n frames.
constexpr uint64_t builder_table_frames(uint64_t n)
{
    const uint64_t nl1 = ceil_div(n, kEntriesPerTable);
    return 2 + ceil_div(nl1, kEntriesPerTable) + nl1;
}

struct DomainLayout {
    Vaddr physmap{0};
    Mfn first{0};
    uint64_t nr_frames = 0;
    uint64_t nr_pt_frames = 0;   // gpfns [first_pt, first_pt + nr_pt_frames) hold the initial tables
    Mfn l4{0};                   // gpfn first_pt
    uint64_t first_l1 = 0;       // gpfn of the L1 that maps gpfns 0..511; the next maps 512..
    uint64_t first_pt = 0;

    Mfn mfn(uint64_t gpfn) const { return Mfn{first.v + gpfn}; }
    Vaddr va(uint64_t gpfn) const { return Vaddr{physmap.v + (gpfn << kPageShift)}; }
    // The L1 that maps gpfn, and the machine address of gpfn's entry in it.
    uint64_t l1_gpfn(uint64_t gpfn) const { return first_l1 + gpfn / kEntriesPerTable; }
    Maddr pte_maddr(uint64_t gpfn) const
    {
        return Maddr{maddr_of(mfn(l1_gpfn(gpfn))).v + (gpfn % kEntriesPerTable) * sizeof(uint64_t)};
    }
};

// 0, -EINVAL (bad spec), -EBUSY (a frame is not free) or a validation error.
[[nodiscard]] int build_domain(Hypervisor& hv, Domain& d, const DomainSpec& spec, DomainLayout& out);

} // namespace pvmmu
