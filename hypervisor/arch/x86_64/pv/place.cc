// Placing a guest kernel in its domain; see pv/place.h.
#include "pv/place.h"

#include <pvmmu/abi.h>

#include "core/domain_builder.h"

namespace pvmmu::x86 {

namespace {

uint64_t pages(uint64_t bytes) { return (bytes + kPageSize - 1) >> kPageShift; }

bool fail(GuestPlacement& out, const char* why)
{
    out.error = why;
    return false;
}

// The 32-byte stub of hypercall `nr` (Xen's x86-64 PV hypercall page): SYSCALL
// clobbers RCX and R11, so the stub keeps them; the number goes in EAX. The
// iret stub is jumped to, not called, and never returns: it also pushes RAX,
// completing struct iret_context on the guest's stack (pv/traps.cc).
void write_stub(uint8_t* p, uint32_t nr)
{
    const uint8_t call[] = {0x51,                 // push %rcx
                            0x41, 0x53,           // push %r11
                            0xb8, 0, 0, 0, 0,     // mov $nr, %eax
                            0x0f, 0x05,           // syscall
                            0x41, 0x5b,           // pop %r11
                            0x59,                 // pop %rcx
                            0xc3};                // ret
    const uint8_t iret[] = {0x51,                 // push %rcx
                            0x41, 0x53,           // push %r11
                            0x50,                 // push %rax
                            0xb8, 0, 0, 0, 0,     // mov $nr, %eax
                            0x0f, 0x05,           // syscall
                            0x0f, 0x0b};          // ud2
    memset(p, 0xcc, 32);   // int3 in the padding
    if (nr == __HYPERVISOR_iret) {
        memcpy(p, iret, sizeof(iret));
        memcpy(p + 5, &nr, 4);
    } else {
        memcpy(p, call, sizeof(call));
        memcpy(p + 4, &nr, 4);
    }
}

} // namespace

void write_hypercall_page(uint8_t* page)
{
    for (uint32_t nr = 0; nr < kPageSize / 32; ++nr) write_stub(page + size_t{nr} * 32, nr);
}

// The tables at gpfn 0 when the image starts at or above their end, else
// after the console ring; the initial module at the image's end (xen.h's
// start-of-day layout: "initial ram disk" right after the kernel image),
// the P2M list after it, then start_info, shared_info and the console ring,
// the stack last.
bool guest_place(const GuestElf& elf, uint64_t nr_frames, GuestPlacement& at, uint64_t module_len)
{
    at = GuestPlacement{};
    at.nr_frames = nr_frames;
    const uint64_t base = elf.virt_base, npt = builder_table_frames(nr_frames);
    // The builder's physmap starts at an L3 entry (core/domain_builder.h).
    if (base & ((1ull << 30) - 1)) {
        guest_detail_hex(at.detail, base);
        return fail(at, "XEN_ELFNOTE_VIRT_BASE is not 1 GiB aligned, as pvmmu's physmap must be");
    }
    if (nr_frames > physmap_max_frames(base)) {
        guest_detail_hex(at.detail, base);
        return fail(at, "the domain's memory is more than the physmap's L3 maps from VIRT_BASE");
    }
    // Lengths from base, never end addresses (core/range.h): base + the
    // memory is 2^64, 0, for 2 GiB at Linux's VIRT_BASE. At most 512 GiB,
    // so no product below wraps.
    const uint64_t size = nr_frames << kPageShift;
    const uint64_t p2m_pages = pages(nr_frames * sizeof(uint64_t));
    // A module longer than the domain never fits; checked first so that its
    // page count below cannot wrap.
    if (module_len > size) return fail(at, "the initial module is larger than the domain's memory");
    const uint64_t module_pages = pages(module_len);
    if (elf.image_start < base || elf.image_end < elf.image_start ||
        !range_within(elf.image_start, elf.image_end - elf.image_start, base, size))
        return fail(at, "the image and its boot structures do not fit the domain's memory");
    const bool tables_first = elf.image_start - base >= (npt << kPageShift);
    // Pages after the image: p2m, si, shared, console, [tables,] stack.
    const uint64_t after = module_pages + p2m_pages + 3 + (tables_first ? 0 : npt) + kGuestStackPages;
    if ((size - (elf.image_end - base)) >> kPageShift < after)
        return fail(at, "the image and its boot structures do not fit the domain's memory");
    at.image_lo = tables_first ? base + (npt << kPageShift) : base;
    at.module = module_len ? elf.image_end : 0;
    at.module_len = module_len;
    at.p2m = elf.image_end + (module_pages << kPageShift);
    at.si = at.p2m + (p2m_pages << kPageShift);
    at.shared = at.si + kPageSize;
    at.console = at.shared + kPageSize;
    const uint64_t tables = at.console + kPageSize;
    at.first_pt = tables_first ? 0 : (tables - base) >> kPageShift;
    // 0 where the stack ends the last GiB of the address space: the CPU's
    // first push wraps to its top, as it should.
    at.stack_top = tables + ((tables_first ? 0 : npt) + kGuestStackPages) * kPageSize;

    // The reader checked the segments against each other and the notes
    // against the segments; here, the segments against the tables.
    for (unsigned i = 0; i < elf.nr_segments; ++i) {
        const GuestSegment& s = elf.seg[i];
        if (!range_within(s.vaddr, s.memsz, at.image_lo, elf.image_end - at.image_lo)) {
            guest_detail_hex(at.detail, s.vaddr);
            return fail(at, "a segment overlaps the domain's page tables");
        }
    }
    return true;
}

} // namespace pvmmu::x86
