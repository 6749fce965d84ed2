// Which segment descriptors a 64-bit PV guest may put in its GDT and LDT, and
// the argument rules of set_gdt and update_descriptor (<xen/arch-x86/xen.h>;
// docs/abi.md §10, §11), as Xen 4.17 answers them. Only the decisions: the
// platform copies the descriptors into its buffers, writes the frames and
// loads GDTR and LDTR (arch pv/descriptors.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/frame.h"
#include "core/guest_va.h"
#include "core/types.h"

namespace pvmmu {

namespace desc_bit {
// The bits of a segment descriptor the rules read, as the CPU defines them:
// the type (43:40; its bit 40 is "accessed" for code and data), S (44: code
// or data, not system), DPL (46:45), P (47).
inline constexpr uint64_t kAccessed = 1ull << 40, kS = 1ull << 44, kP = 1ull << 47;
inline constexpr unsigned kTypeShift = 40, kDplShift = 45;
inline constexpr uint64_t kDpl = 3ull << kDplShift;
} // namespace desc_bit

// Descriptors per page of a GDT or LDT.
inline constexpr uint32_t kDescriptorsPerPage = kPageSize / 8;

// Xen 4.17's rule for a 64-bit PV guest's GDT and LDT entries (its
// check_descriptor, as the conform guest sees it on Xen): a descriptor that
// is not present always faults, so any one is taken as it is; a present one
// gets a DPL below 3, the ring a 64-bit PV kernel runs in, raised to 3;
// then every code or data segment is taken — 32-bit and 16-bit code too, so
// a guest can run compatibility mode in ring 3 (what that opens, and how it
// is closed: docs/security.md "Compatibility mode") — and of the system
// descriptors the type 0 one, which the CPU never loads (the upper half of
// a 16-byte one). Xen also takes a call gate to a guest code segment,
// stored with DPL 0 so that its use faults into Xen, which emulates it;
// pvmmu emulates no far call and refuses every gate, TSS and LDT
// descriptor (docs/abi.md §11). `d` becomes what is stored; false: refused.
constexpr bool guest_desc_fix(uint64_t& d)
{
    using namespace desc_bit;
    if (!(d & kP)) return true;
    if ((d & kDpl) != kDpl) d |= kDpl;   // a DPL below 3 (any other) raised to 3
    return (d & kS) || ((d >> kTypeShift) & 15) == 0;
}
constexpr bool guest_desc_ok(uint64_t d) { return guest_desc_fix(d); }

// set_gdt(frame_list, entries): at most the entries below Xen's reserved
// ones (FIRST_RESERVED_GDT_ENTRY), else -EINVAL; they come from
// gdt_frames(entries) frames.
constexpr long set_gdt_entries_check(uint32_t entries)
{
    return entries > FIRST_RESERVED_GDT_ENTRY ? -XEN_EINVAL : 0;
}
constexpr uint32_t gdt_frames(uint32_t entries) { return (entries + kDescriptorsPerPage - 1) / kDescriptorsPerPage; }

// Entries on page `page` of a table of `entries` entries.
constexpr uint32_t descriptors_on_page(uint32_t entries, uint32_t page)
{
    const uint32_t left = entries - page * kDescriptorsPerPage;
    return left < kDescriptorsPerPage ? left : kDescriptorsPerPage;
}

// A frame whose descriptors set_gdt or MMUEXT_SET_LDT copies, by its type
// at the time of the copy: Xen types a descriptor frame seg_desc, which
// excludes a page-table type in use, and for an LDT page (`ldt`) also a
// writable one in use; pvmmu has no such type and copies, so it checks that
// the frame is neither: else -EINVAL.
constexpr long descriptor_frame_check(PageType t, uint64_t type_count, bool ldt)
{
    return (is_table_type(t) || (ldt && t == PageType::Writable)) && type_count ? -XEN_EINVAL : 0;
}

// MMUEXT_SET_LDT(base, entries), after the core's checks of both (page
// alignment, at most 8192 entries): a base in the hypervisor's part of the
// address space is -EINVAL (Xen's __addr_ok), unless there are no entries.
constexpr long set_ldt_base_check(uint64_t base, uint32_t entries)
{
    return entries && !guest_va_ok(base) ? -XEN_EINVAL : 0;
}

// update_descriptor(maddr, desc)'s first checks, in Xen's order: an 8-byte
// aligned address and a descriptor guest_desc_fix takes (`desc` becomes
// what is stored), else -EINVAL. The frame's checks come after.
constexpr long update_descriptor_check(uint64_t maddr, uint64_t& desc)
{
    return (maddr & 7) || !guest_desc_fix(desc) ? -XEN_EINVAL : 0;
}

} // namespace pvmmu
