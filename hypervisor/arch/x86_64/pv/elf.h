// Reading a PV guest kernel: an ELF64 x86-64 executable with Xen's ELF notes
// (<xen/elfnote.h>) or, lacking any, the legacy `__xen_guest` section
// ("GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=...,..."), as Xen's own domain
// builder reads it. Taken: the entry point (default e_entry), the hypercall
// page (optional), the virtual base (default 0; the domain's initial mapping,
// docs/abi.md "Bare-metal guest ABI"), the physical-address offset that with
// it places each segment, and the feature string, whose required ('!')
// features must all be ones pvmmu has. Refused as Xen refuses them: a kernel
// with neither notes nor section, one that names neither LOADER "generic"
// nor GUEST_OS "linux", one whose XEN_VERSION is not "xen-3.0".
// Every field is checked against the file's size: a malformed image is
// refused, never read out of bounds. Every address a note gives is checked
// here, once, against the image (core/range.h: no bound can wrap): VIRT_BASE
// canonical, at or below the first segment, PADDR_OFFSET not above it; the
// entry inside a loadable segment, the hypercall page a page of one; INIT_P2M
// a canonical page; segments that neither wrap nor overlap. A refusal names
// the note and its value.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pvmmu::x86 {

struct GuestSegment {
    uint64_t vaddr = 0, memsz = 0;
    uint64_t offset = 0, filesz = 0;   // bytes of the file; the rest is zero
};

struct GuestElf {
    static constexpr unsigned kMaxSegments = 8;
    GuestSegment seg[kMaxSegments];
    unsigned nr_segments = 0;
    uint64_t entry = 0;            // XEN_ELFNOTE_ENTRY
    uint64_t hypercall_page = 0;   // XEN_ELFNOTE_HYPERCALL_PAGE, if has_hypercall_page
    bool has_hypercall_page = false;
    uint64_t virt_base = 0;        // XEN_ELFNOTE_VIRT_BASE
    uint64_t paddr_offset = 0;     // XEN_ELFNOTE_PADDR_OFFSET
    uint64_t init_p2m = 0;         // XEN_ELFNOTE_INIT_P2M, if has_init_p2m (read, checked, not used)
    bool has_init_p2m = false;
    // XEN_ELFNOTE_MOD_START_PFN non-zero: the kernel takes start_info's
    // mod_start as a PFN (SIF_MOD_START_PFN), as Xen's builders then give it.
    bool mod_start_pfn = false;
    uint64_t image_start = ~0ull;  // start of the lowest segment
    uint64_t image_end = 0;        // end of the highest segment, page aligned
    const char* error = nullptr;   // why the image was refused
    char detail[48] = {};          // and what it named (a required feature, a value), or ""
};

// "0x" and v in hex, NUL-terminated, into a refusal's detail.
void guest_detail_hex(char (&out)[48], uint64_t v);

// true, or false with out.error set.
bool guest_elf_parse(const uint8_t* file, size_t size, GuestElf& out);

} // namespace pvmmu::x86
