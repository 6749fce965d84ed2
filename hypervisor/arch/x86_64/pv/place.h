// Where a PV guest kernel and its boot structures go in a domain of nr_frames
// frames, and the writes that put them there (docs/abi.md "Bare-metal guest
// ABI"): the core's builder maps every gpfn g at virt_base + g * 4 KiB; the
// image's segments go to the gpfns their addresses name; then, as Xen's
// builder orders them, the initial module (a ramdisk: start_info's
// mod_start/mod_len), the P2M list (mfn_list), start_info, shared_info, the
// console ring and a boot stack. The builder's page tables take gpfns 0..
// when the image starts above them (pvmmu's own kernels, linked 2 MiB up); a
// kernel that starts lower (one linked at 0, which unmaps or writes VA 0 and
// 0x1000) gets them where Xen puts them: after the console ring, before the
// stack (<xen/xen.h>, "the layout of the start-of-day memory").
// Pure and hosted: pv/loader.cc runs it on the direct map, the unit tests
// and the image fuzzer on a fake memory that records every write.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pv/elf.h"
#include "core/range.h"
#include "core/types.h"

namespace pvmmu::x86 {

inline constexpr uint64_t kGuestStackPages = 4;

struct GuestPlacement {
    uint64_t nr_frames = 0;
    uint64_t first_pt = 0;   // gpfn of the builder's first table
    uint64_t image_lo = 0;   // no segment below: the physmap's base or the tables' end
    uint64_t module = 0, module_len = 0;   // the initial module's address and bytes (0, 0: none)
    uint64_t p2m = 0;                      // the P2M list (start_info.mfn_list)
    uint64_t si = 0, shared = 0, console = 0, stack_top = 0;
    const char* error = nullptr;   // why the image was refused
    char detail[48] = {};          // a number that goes with it, or ""
};

// The most frames a physmap at base can have: the core builder gives it the
// L3 entries from base's to the slot's last (1 GiB each), so (512 - that
// entry) GiB; Linux's VIRT_BASE, 0xffffffff80000000 (entry 510), 2 GiB.
constexpr uint64_t physmap_max_frames(uint64_t base)
{
    const uint64_t l3i = (base >> 30) & (kEntriesPerTable - 1);
    return (kEntriesPerTable - l3i) * kEntriesPerTable * kEntriesPerTable;
}
static_assert(physmap_max_frames(0xffffffff80000000) == (2ull << 30) >> kPageShift);

// Places elf (guest_elf_parse accepted it) and an initial module of
// module_len bytes (0: none) in a domain of nr_frames frames: true, or false
// with out.error set. Nothing is written.
bool guest_place(const GuestElf& elf, uint64_t nr_frames, GuestPlacement& out, uint64_t module_len = 0);

// Xen's x86-64 PV hypercall page (32 bytes per number) written at `page`.
void write_hypercall_page(uint8_t* page);

// The image's bytes, its hypercall page, the initial module's bytes
// (at.module_len of them from `module`) and the P2M list (gpfn g is machine
// frame first_mfn + g), written through mem: mem.bytes(va, n) gives the n
// bytes of guest memory at virtual address va, or nullptr where they are not
// the domain's. Only after guest_place accepted the image. False if mem
// refused a range (a bug of guest_place: the caller stops).
template <class Memory>
bool guest_write_image(const GuestElf& elf, const GuestPlacement& at, const uint8_t* file, uint64_t first_mfn,
                       Memory& mem, const uint8_t* module = nullptr)
{
    for (unsigned i = 0; i < elf.nr_segments; ++i) {
        const GuestSegment& s = elf.seg[i];
        uint8_t* p = mem.bytes(s.vaddr, s.filesz);
        if (!p) return false;
        memcpy(p, file + s.offset, s.filesz);   // the rest stays zero
    }
    if (elf.has_hypercall_page) {
        uint8_t* p = mem.bytes(elf.hypercall_page, kPageSize);
        if (!p) return false;
        write_hypercall_page(p);
    }
    if (at.module_len) {
        uint8_t* p = module ? mem.bytes(at.module, at.module_len) : nullptr;
        if (!p) return false;
        memcpy(p, module, at.module_len);   // the rest of its last page stays zero
    }
    // The P2M list: the frames are contiguous, but the ABI is the list.
    uint8_t* p = mem.bytes(at.p2m, at.nr_frames * sizeof(uint64_t));
    if (!p) return false;
    for (uint64_t g = 0; g < at.nr_frames; ++g) {
        const uint64_t mfn = first_mfn + g;
        memcpy(p + g * sizeof(mfn), &mfn, sizeof(mfn));
    }
    return true;
}

} // namespace pvmmu::x86
