// A minimal PV guest kernel built in memory for the loader's tests
// (guest_elf_test.cc, guest_place_test.cc): ELF header, two program headers
// (PT_LOAD of one page at kText, PT_NOTE), Xen's notes, then the page; each
// note and field can be changed before or after build().
#pragma once

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include <xen/elfnote.h>

namespace pvmmu::x86::test {

constexpr uint64_t kBase = 0x8000000000, kText = kBase + 0x200000;

// A minimal guest kernel: ELF header, two program headers (PT_LOAD of one
// page at kText, PT_NOTE), the notes, then the page.
struct Image {
    std::vector<uint8_t> bytes;
    uint64_t entry = kText + 0x100, hypercall = kText, virt_base = kBase;
    std::string features = "!mmu_pt_update_preserve_ad";
    std::string loader = "generic", guest_os = "", xen_version = "xen-3.0";   // "": no such note
    bool with_entry = true, with_virt_base = true, with_paddr_offset = true;   // PADDR_OFFSET = VIRT_BASE
    bool with_hypercall = true, with_notes = true;
    std::string legacy;   // non-empty: a __xen_guest section with this string (and its NUL)

    static constexpr size_t kPhOff = sizeof(Elf64_Ehdr), kNoteOff = kPhOff + 2 * sizeof(Elf64_Phdr);

    void note(std::vector<uint8_t>& n, uint32_t type, const void* desc, uint32_t size)
    {
        const uint32_t h[3] = {4, size, type};
        n.insert(n.end(), reinterpret_cast<const uint8_t*>(h), reinterpret_cast<const uint8_t*>(h) + 12);
        n.insert(n.end(), {'X', 'e', 'n', 0});
        n.insert(n.end(), static_cast<const uint8_t*>(desc), static_cast<const uint8_t*>(desc) + size);
        while (n.size() % 4) n.push_back(0);
    }

    std::vector<uint8_t>& build()
    {
        std::vector<uint8_t> notes;
        const auto str = [&](uint32_t type, const std::string& v) {
            if (!v.empty()) note(notes, type, v.c_str(), uint32_t(v.size() + 1));
        };
        if (with_entry) note(notes, XEN_ELFNOTE_ENTRY, &entry, 8);
        if (with_hypercall) note(notes, XEN_ELFNOTE_HYPERCALL_PAGE, &hypercall, 8);
        if (with_virt_base) note(notes, XEN_ELFNOTE_VIRT_BASE, &virt_base, 8);
        if (with_paddr_offset) note(notes, XEN_ELFNOTE_PADDR_OFFSET, &virt_base, 8);
        str(XEN_ELFNOTE_FEATURES, features);
        str(XEN_ELFNOTE_LOADER, loader);
        str(XEN_ELFNOTE_GUEST_OS, guest_os);
        str(XEN_ELFNOTE_XEN_VERSION, xen_version);
        if (!with_notes) notes.clear();
        const size_t text_off = (kNoteOff + notes.size() + 4095) & ~size_t(4095);
        bytes.assign(text_off + 4096, 0x90);

        Elf64_Ehdr eh{};
        std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
        eh.e_ident[EI_CLASS] = ELFCLASS64;
        eh.e_ident[EI_DATA] = ELFDATA2LSB;
        eh.e_ident[EI_VERSION] = EV_CURRENT;
        eh.e_type = ET_EXEC;
        eh.e_machine = EM_X86_64;
        eh.e_entry = entry;
        eh.e_phoff = kPhOff;
        eh.e_ehsize = sizeof(eh);
        eh.e_phentsize = sizeof(Elf64_Phdr);
        eh.e_phnum = 2;
        std::memcpy(bytes.data(), &eh, sizeof(eh));
        Elf64_Phdr load{PT_LOAD, PF_R | PF_X, text_off, kText, kText, 4096, 8192, 4096};
        Elf64_Phdr nt{PT_NOTE, PF_R, kNoteOff, 0, 0, notes.size(), notes.size(), 4};
        std::memcpy(bytes.data() + kPhOff, &load, sizeof(load));
        std::memcpy(bytes.data() + kPhOff + sizeof(load), &nt, sizeof(nt));
        std::memcpy(bytes.data() + kNoteOff, notes.data(), notes.size());
        if (!legacy.empty()) add_legacy_section();
        return bytes;
    }

    // Section headers at the end: 0 (null), 1 the names, 2 __xen_guest.
    void add_legacy_section()
    {
        static constexpr char kNames[] = "\0.shstrtab\0__xen_guest";
        const size_t names_off = bytes.size();
        bytes.insert(bytes.end(), kNames, kNames + sizeof(kNames));
        const size_t guest_off = bytes.size();
        bytes.insert(bytes.end(), legacy.c_str(), legacy.c_str() + legacy.size() + 1);
        while (bytes.size() % 8) bytes.push_back(0);
        const size_t sh_off = bytes.size();
        Elf64_Shdr sh[3]{};
        sh[1].sh_name = 1;
        sh[1].sh_type = SHT_STRTAB;
        sh[1].sh_offset = names_off;
        sh[1].sh_size = sizeof(kNames);
        sh[2].sh_name = 11;
        sh[2].sh_type = SHT_PROGBITS;
        sh[2].sh_offset = guest_off;
        sh[2].sh_size = legacy.size() + 1;
        bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(sh), reinterpret_cast<const uint8_t*>(sh + 3));
        eh().e_shoff = sh_off;
        eh().e_shentsize = sizeof(Elf64_Shdr);
        eh().e_shnum = 3;
        eh().e_shstrndx = 1;
    }
    Elf64_Ehdr& eh() { return *reinterpret_cast<Elf64_Ehdr*>(bytes.data()); }
    Elf64_Phdr& ph(unsigned i) { return reinterpret_cast<Elf64_Phdr*>(bytes.data() + kPhOff)[i]; }
};

} // namespace pvmmu::x86::test
