// The guest kernel reader; see arch/guest_elf.h.
#include "arch/guest_elf.h"

#include <elf.h>
#include <string.h>

#include <pvmmu/abi.h>
#include <xen/elfnote.h>

#include "core/pte.h"

namespace pvmmu::x86 {

namespace {

// Features a guest may require with '!' in XEN_ELFNOTE_FEATURES: those of
// Xen's names that pvmmu provides (cmd 2 is Xen's MMU_PT_UPDATE_PRESERVE_AD;
// PAE page directories above 4 GiB concern 32-bit guests only, as on Xen
// x86-64). Optional features are ignored, known or not, as Xen's loader does.
constexpr const char* kSupportedFeatures[] = {"mmu_pt_update_preserve_ad", "pae_pgdir_above_4gb"};

bool in_file(size_t size, uint64_t off, uint64_t len) { return off <= size && len <= size - off; }

bool fail(GuestElf& out, const char* why)
{
    out.error = why;
    return false;
}

bool feature_supported(const char* name, size_t n)
{
    for (const char* f : kSupportedFeatures)
        if (strlen(f) == n && memcmp(f, name, n) == 0) return true;
    return false;
}

// "a|!b|c": every feature marked '!' must be supported; the first that is
// not is named in out.detail.
bool features_ok(const char* s, size_t n, GuestElf& out)
{
    for (size_t i = 0; i < n && s[i];) {
        size_t j = i;
        while (j < n && s[j] && s[j] != '|') ++j;
        if (s[i] == '!' && !feature_supported(s + i + 1, j - i - 1)) {
            const size_t len = j - i - 1 < sizeof(out.detail) - 1 ? j - i - 1 : sizeof(out.detail) - 1;
            memcpy(out.detail, s + i + 1, len);
            out.detail[len] = 0;
            return fail(out, "the guest requires a feature pvmmu does not have");
        }
        i = j + 1;
    }
    return true;
}

uint64_t note_value(const uint8_t* desc, uint32_t descsz)
{
    uint64_t v = 0;
    memcpy(&v, desc, descsz < 8 ? descsz : 8);
    return v;
}

// The notes of one PT_NOTE segment ("Note Section" of the ELF gABI: namesz,
// descsz, type, then name and desc, each padded to 4 bytes). Notes pvmmu has
// no use for (LOADER, GUEST_OS, XEN_VERSION, SUPPORTED_FEATURES, ...) are
// skipped, as are other owners' notes.
bool read_notes(const uint8_t* p, uint64_t len, GuestElf& out)
{
    for (uint64_t off = 0; off + sizeof(Elf64_Nhdr) <= len;) {
        Elf64_Nhdr h;
        memcpy(&h, p + off, sizeof(h));
        const uint64_t name = off + sizeof(h), desc = name + ((uint64_t(h.n_namesz) + 3) & ~3ull);
        const uint64_t next = desc + ((uint64_t(h.n_descsz) + 3) & ~3ull);
        if (next > len) return fail(out, "a note runs past its segment");
        off = next;
        if (h.n_namesz != 4 || memcmp(p + name, "Xen", 4) != 0) continue;
        const uint8_t* d = p + desc;
        switch (h.n_type) {
        case XEN_ELFNOTE_ENTRY: out.entry = note_value(d, h.n_descsz); break;
        case XEN_ELFNOTE_HYPERCALL_PAGE: out.hypercall_page = note_value(d, h.n_descsz); break;
        case XEN_ELFNOTE_VIRT_BASE: out.virt_base = note_value(d, h.n_descsz); break;
        case XEN_ELFNOTE_PADDR_OFFSET: out.paddr_offset = note_value(d, h.n_descsz); break;
        case XEN_ELFNOTE_FEATURES:
            if (!features_ok(reinterpret_cast<const char*>(d), h.n_descsz, out)) return false;
            break;
        default: break;
        }
    }
    return true;
}

} // namespace

bool guest_elf_parse(const uint8_t* file, size_t size, GuestElf& out)
{
    out = GuestElf{};
    Elf64_Ehdr eh;
    if (size < sizeof(eh)) return fail(out, "shorter than an ELF header");
    memcpy(&eh, file, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return fail(out, "not an ELF file");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        eh.e_machine != EM_X86_64 || eh.e_type != ET_EXEC)
        return fail(out, "not an x86-64 ELF64 executable");
    if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
        !in_file(size, eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
        return fail(out, "program headers outside the file");

    // The notes first: where a segment goes depends on them.
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, file + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_NOTE) continue;
        if (!in_file(size, ph.p_offset, ph.p_filesz)) return fail(out, "notes outside the file");
        if (!read_notes(file + ph.p_offset, ph.p_filesz, out)) return false;
    }
    // As Xen's loader: ENTRY defaults to e_entry, VIRT_BASE and PADDR_OFFSET
    // to 0, and a segment goes to p_paddr + VIRT_BASE - PADDR_OFFSET.
    if (!out.entry) out.entry = eh.e_entry;
    const uint64_t virt_offset = out.virt_base - out.paddr_offset;

    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, file + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
        ph.p_vaddr = ph.p_paddr + virt_offset;
        if (out.nr_segments == GuestElf::kMaxSegments) return fail(out, "too many loadable segments");
        if (ph.p_filesz > ph.p_memsz || !in_file(size, ph.p_offset, ph.p_filesz))
            return fail(out, "a segment outside the file");
        // The page-rounded end must not wrap either: it bounds the image.
        if (ph.p_vaddr + ph.p_memsz + kPageSize < ph.p_vaddr || !canonical(Vaddr{ph.p_vaddr}) ||
            !canonical(Vaddr{ph.p_vaddr + ph.p_memsz - 1}))
            return fail(out, "a segment outside the address space");
        out.seg[out.nr_segments++] = GuestSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
        const uint64_t end = (ph.p_vaddr + ph.p_memsz + kPageSize - 1) & ~(kPageSize - 1);
        if (end > out.image_end) out.image_end = end;
    }
    if (!out.nr_segments) return fail(out, "no loadable segment");
    if (!out.hypercall_page) return fail(out, "no HYPERCALL_PAGE note");
    // The start-of-day tables sit at gpfn 0 = VIRT_BASE (guest_loader.cc):
    // a kernel linked at 0 needs them after its image, as Xen puts them.
    if (!out.virt_base) return fail(out, "VIRT_BASE 0 (a kernel linked at 0) is not supported yet");
    return true;
}

} // namespace pvmmu::x86
