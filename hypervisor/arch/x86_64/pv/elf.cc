// The guest kernel reader; see pv/elf.h.
#include "pv/elf.h"

#include <elf.h>
#include <string.h>

#include <pvmmu/abi.h>
#include <xen/elfnote.h>

#include "core/pte.h"
#include "core/range.h"

namespace pvmmu::x86 {

namespace {

// Features a guest may require with '!' in XEN_ELFNOTE_FEATURES: those of
// Xen's names that pvmmu provides (cmd 2 is Xen's MMU_PT_UPDATE_PRESERVE_AD;
// PAE page directories above 4 GiB concern 32-bit guests only, as on Xen
// x86-64). Optional features are ignored, known or not, as Xen's loader does.
constexpr const char* kSupportedFeatures[] = {"mmu_pt_update_preserve_ad", "pae_pgdir_above_4gb",
                                              "writable_page_tables"};

bool in_file(size_t size, uint64_t off, uint64_t len) { return range_within(off, len, 0, size); }

bool fail(GuestElf& out, const char* why)
{
    out.error = why;
    return false;
}

bool fail(GuestElf& out, const char* why, uint64_t value)
{
    guest_detail_hex(out.detail, value);
    return fail(out, why);
}

// [va, va + len) ends at or below 2^64.
bool below_top(uint64_t va, uint64_t len) { return len == 0 || len - 1 <= ~va; }

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

// What the loader checks besides the values (libelf's rules, docs/abi.md
// §10): which of the two sources said anything, and the start of the
// LOADER, GUEST_OS and XEN_VERSION strings (Xen compares prefixes).
struct Said {
    bool notes = false, legacy = false;
    bool paddr_offset = false, entry = false;
    uint64_t hypercall_pfn = 0;   // legacy HYPERCALL_PAGE: a page number from VIRT_BASE
    bool legacy_hypercall = false;
    char loader[8] = {}, guest_os[8] = {}, xen_version[8] = {};
};

void keep_string(char (&out)[8], const char* s, size_t n)
{
    size_t i = 0;
    for (; i < n && i < sizeof(out) - 1 && s[i]; ++i) out[i] = s[i];
    out[i] = 0;
}

bool starts(const char (&s)[8], const char* prefix)
{
    const size_t n = strlen(prefix);
    return n < sizeof(s) && memcmp(s, prefix, n) == 0;   // s is NUL-terminated: no match past its end
}

// The notes of one PT_NOTE segment ("Note Section" of the ELF gABI: namesz,
// descsz, type, then name and desc, each padded to 4 bytes). Notes pvmmu has
// no use for (SUPPORTED_FEATURES, PAE_MODE, ...) are skipped, as are other
// owners' notes.
bool read_notes(const uint8_t* p, uint64_t len, GuestElf& out, Said& said)
{
    for (uint64_t off = 0; range_within(off, sizeof(Elf64_Nhdr), 0, len);) {
        Elf64_Nhdr h;
        memcpy(&h, p + off, sizeof(h));
        // Each size below 2^32 + 3: their sum cannot wrap 64 bits.
        const uint64_t name_len = (uint64_t(h.n_namesz) + 3) & ~3ull, desc_len = (uint64_t(h.n_descsz) + 3) & ~3ull;
        const uint64_t name = off + sizeof(h), desc = name + name_len;
        if (!range_within(name, name_len + desc_len, 0, len)) return fail(out, "a note runs past its segment");
        const uint64_t next = desc + desc_len;
        off = next;
        if (h.n_namesz != 4 || memcmp(p + name, "Xen", 4) != 0) continue;
        said.notes = true;
        const uint8_t* d = p + desc;
        const char* str = reinterpret_cast<const char*>(d);
        switch (h.n_type) {
        case XEN_ELFNOTE_ENTRY:
            out.entry = note_value(d, h.n_descsz);
            said.entry = true;
            break;
        case XEN_ELFNOTE_HYPERCALL_PAGE:
            out.hypercall_page = note_value(d, h.n_descsz);
            out.has_hypercall_page = true;
            break;
        case XEN_ELFNOTE_VIRT_BASE:
            out.virt_base = note_value(d, h.n_descsz);
            break;
        case XEN_ELFNOTE_PADDR_OFFSET:
            out.paddr_offset = note_value(d, h.n_descsz);
            said.paddr_offset = true;
            break;
        case XEN_ELFNOTE_INIT_P2M:
            out.init_p2m = note_value(d, h.n_descsz);
            out.has_init_p2m = true;
            break;
        case XEN_ELFNOTE_MOD_START_PFN:
            out.mod_start_pfn = note_value(d, h.n_descsz) != 0;
            break;
        case XEN_ELFNOTE_LOADER: keep_string(said.loader, str, h.n_descsz); break;
        case XEN_ELFNOTE_GUEST_OS: keep_string(said.guest_os, str, h.n_descsz); break;
        case XEN_ELFNOTE_XEN_VERSION: keep_string(said.xen_version, str, h.n_descsz); break;
        case XEN_ELFNOTE_FEATURES:
            if (!features_ok(str, h.n_descsz, out)) return false;
            break;
        default: break;
        }
    }
    return true;
}

// A number of the legacy string: 0x-prefixed hex or decimal (libelf reads
// them with strtoull base 0; octal is not worth having). False when it is
// neither or does not fit 64 bits.
bool legacy_number(const char* s, size_t n, uint64_t& v)
{
    const bool hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    const unsigned base = hex ? 16 : 10;
    v = 0;
    if (n == 0 || (hex && n == 2)) return false;
    for (size_t i = hex ? 2 : 0; i < n; ++i) {
        const char c = s[i];
        const unsigned d = c >= '0' && c <= '9' ? unsigned(c - '0')
                           : c >= 'a' && c <= 'f' ? unsigned(c - 'a' + 10)
                           : c >= 'A' && c <= 'F' ? unsigned(c - 'A' + 10) : 99;
        if (d >= base || v > (~0ull - d) / base) return false;
        v = v * base + d;
    }
    return true;
}

bool key_is(const char* k, size_t n, const char* want) { return strlen(want) == n && memcmp(k, want, n) == 0; }

// The legacy `__xen_guest` section's string: comma-separated NAME=VALUE
// (libelf's elf_xen_parse_guest_info). XEN_VER is XEN_VERSION's, and
// HYPERCALL_PAGE a page number counted from VIRT_BASE. Unknown names
// (PAE, BSD_SYMTAB, ...) are skipped, as Xen's loader does.
bool read_legacy(const char* s, size_t len, GuestElf& out, Said& said)
{
    said.legacy = true;
    for (size_t i = 0; i < len && s[i];) {
        size_t j = i;
        while (j < len && s[j] && s[j] != ',') ++j;
        size_t eq = i;
        while (eq < j && s[eq] != '=') ++eq;
        const char* k = s + i;
        const size_t kn = eq - i;
        const char* v = s + (eq < j ? eq + 1 : j);
        const size_t vn = eq < j ? j - eq - 1 : 0;
        uint64_t num = 0;
        const bool numeric = key_is(k, kn, "VIRT_BASE") || key_is(k, kn, "ELF_PADDR_OFFSET") ||
                             key_is(k, kn, "HYPERCALL_PAGE");
        if (numeric && !legacy_number(v, vn, num)) return fail(out, "a number of the __xen_guest string is malformed");
        if (key_is(k, kn, "VIRT_BASE")) out.virt_base = num;
        else if (key_is(k, kn, "ELF_PADDR_OFFSET")) out.paddr_offset = num, said.paddr_offset = true;
        else if (key_is(k, kn, "HYPERCALL_PAGE")) said.hypercall_pfn = num, said.legacy_hypercall = true;
        else if (key_is(k, kn, "LOADER")) keep_string(said.loader, v, vn);
        else if (key_is(k, kn, "GUEST_OS")) keep_string(said.guest_os, v, vn);
        else if (key_is(k, kn, "XEN_VER")) keep_string(said.xen_version, v, vn);
        else if (key_is(k, kn, "FEATURES") && !features_ok(v, vn, out)) return false;
        i = j + 1;
    }
    return true;
}

// The `__xen_guest` section, read only when the image has no Xen note (as
// Xen's loader). No section headers, or no such section: nothing said.
bool find_legacy(const uint8_t* file, size_t size, const Elf64_Ehdr& eh, GuestElf& out, Said& said)
{
    if (eh.e_shoff == 0 || eh.e_shnum == 0) return true;
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shstrndx >= eh.e_shnum ||
        !in_file(size, eh.e_shoff, uint64_t(eh.e_shnum) * sizeof(Elf64_Shdr)))
        return fail(out, "section headers outside the file");
    const auto shdr = [&](unsigned i) {
        Elf64_Shdr sh;
        memcpy(&sh, file + eh.e_shoff + i * sizeof(sh), sizeof(sh));
        return sh;
    };
    const Elf64_Shdr names = shdr(eh.e_shstrndx);
    if (!in_file(size, names.sh_offset, names.sh_size)) return fail(out, "section names outside the file");
    static constexpr char kName[] = "__xen_guest";
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
        const Elf64_Shdr sh = shdr(i);
        if (!range_within(sh.sh_name, sizeof(kName), 0, names.sh_size) ||
            memcmp(file + names.sh_offset + sh.sh_name, kName, sizeof(kName)) != 0)
            continue;
        if (sh.sh_type == SHT_NOBITS || !in_file(size, sh.sh_offset, sh.sh_size))
            return fail(out, "the __xen_guest section outside the file");
        return read_legacy(reinterpret_cast<const char*>(file + sh.sh_offset), sh.sh_size, out, said);
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
    Said said;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, file + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_NOTE) continue;
        if (!in_file(size, ph.p_offset, ph.p_filesz)) return fail(out, "notes outside the file");
        if (!read_notes(file + ph.p_offset, ph.p_filesz, out, said)) return false;
    }
    if (!said.notes && !find_legacy(file, size, eh, out, said)) return false;
    // libelf's elf_xen_note_check, for a PV kernel: Xen's notes or the
    // legacy section; LOADER "generic" or GUEST_OS "linux"; XEN_VERSION
    // "xen-3.0" (prefixes, as Xen compares them).
    if (!said.notes && !said.legacy) return fail(out, "not a Xen kernel: no Xen ELF note and no __xen_guest section");
    if (!starts(said.loader, "generic") && !starts(said.guest_os, "linux"))
        return fail(out, "neither LOADER \"generic\" nor GUEST_OS \"linux\" (Xen loads no other)");
    if (!starts(said.xen_version, "xen-3.0")) return fail(out, "XEN_VERSION is not \"xen-3.0\" (Xen loads no other)");
    // As Xen's loader: ENTRY defaults to e_entry, VIRT_BASE to 0 and
    // PADDR_OFFSET to 0 (to VIRT_BASE for a legacy string), and a segment
    // goes to p_paddr + VIRT_BASE - PADDR_OFFSET.
    if (!said.paddr_offset) out.paddr_offset = said.notes ? 0 : out.virt_base;
    if (!canonical(Vaddr{out.virt_base})) return fail(out, "XEN_ELFNOTE_VIRT_BASE is not canonical", out.virt_base);
    if (out.paddr_offset > out.virt_base)
        return fail(out, "XEN_ELFNOTE_PADDR_OFFSET is above XEN_ELFNOTE_VIRT_BASE", out.paddr_offset);
    if (said.legacy_hypercall) {
        // A page number: shifted, it must neither lose bits nor wrap VIRT_BASE.
        if (said.hypercall_pfn > (~0ull >> kPageShift) || !below_top(out.virt_base, said.hypercall_pfn << kPageShift))
            return fail(out, "HYPERCALL_PAGE of the __xen_guest string is past the address space", said.hypercall_pfn);
        out.hypercall_page = out.virt_base + (said.hypercall_pfn << kPageShift);
        out.has_hypercall_page = true;
    }
    if (!said.entry) out.entry = eh.e_entry;
    if (out.has_init_p2m && (!canonical(Vaddr{out.init_p2m}) || (out.init_p2m & (kPageSize - 1))))
        return fail(out, "XEN_ELFNOTE_INIT_P2M is not a canonical page address", out.init_p2m);

    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        Elf64_Phdr ph;
        memcpy(&ph, file + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
        if (out.nr_segments == GuestElf::kMaxSegments) return fail(out, "too many loadable segments");
        if (ph.p_filesz > ph.p_memsz || !in_file(size, ph.p_offset, ph.p_filesz))
            return fail(out, "a segment outside the file");
        // At p_paddr + VIRT_BASE - PADDR_OFFSET (PADDR_OFFSET <= VIRT_BASE):
        // a p_paddr below PADDR_OFFSET is a segment below VIRT_BASE.
        if (ph.p_paddr < out.paddr_offset)
            return fail(out, "XEN_ELFNOTE_VIRT_BASE is above the image's first segment", out.virt_base);
        const uint64_t from_base = ph.p_paddr - out.paddr_offset;
        if (!below_top(out.virt_base, from_base)) return fail(out, "a segment outside the address space");
        ph.p_vaddr = out.virt_base + from_base;
        // Its page-rounded end bounds the image: below 2^64 with a page to
        // spare, so the image's end is never 0.
        if (ph.p_memsz > ~0ull - 2 * kPageSize ||
            !below_top(ph.p_vaddr, ((ph.p_memsz + kPageSize - 1) & ~(kPageSize - 1)) + kPageSize) ||
            !canonical(Vaddr{ph.p_vaddr}) || !canonical(Vaddr{ph.p_vaddr + (ph.p_memsz - 1)}))
            return fail(out, "a segment outside the address space");
        for (unsigned j = 0; j < out.nr_segments; ++j)
            if (ranges_overlap(ph.p_vaddr, ph.p_memsz, out.seg[j].vaddr, out.seg[j].memsz))
                return fail(out, "two loadable segments overlap");
        out.seg[out.nr_segments++] = GuestSegment{ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz};
        const uint64_t end = (ph.p_vaddr + ph.p_memsz + kPageSize - 1) & ~(kPageSize - 1);
        if (end > out.image_end) out.image_end = end;
        if (ph.p_vaddr < out.image_start) out.image_start = ph.p_vaddr;
    }
    if (!out.nr_segments) return fail(out, "no loadable segment");

    bool entry_in = false, hcall_in = false;
    for (unsigned i = 0; i < out.nr_segments; ++i) {
        const GuestSegment& s = out.seg[i];
        entry_in |= point_within(out.entry, s.vaddr, s.memsz);
        hcall_in |= range_within(out.hypercall_page, kPageSize, s.vaddr, s.memsz);
    }
    if (!entry_in)
        return fail(out, said.entry ? "XEN_ELFNOTE_ENTRY is not in a loadable segment"
                                    : "the ELF entry point (e_entry) is not in a loadable segment", out.entry);
    if (out.has_hypercall_page && (!hcall_in || (out.hypercall_page & (kPageSize - 1))))
        return fail(out, said.notes ? "XEN_ELFNOTE_HYPERCALL_PAGE is not a page of a loadable segment"
                                    : "HYPERCALL_PAGE of the __xen_guest string is not a page of a loadable segment",
                    out.hypercall_page);
    return true;
}

void guest_detail_hex(char (&out)[48], uint64_t v)
{
    char digits[16];
    unsigned n = 0;
    do {
        digits[n++] = "0123456789abcdef"[v & 0xf];
        v >>= 4;
    } while (v);
    out[0] = '0';
    out[1] = 'x';
    for (unsigned i = 0; i < n; ++i) out[2 + i] = digits[n - 1 - i];
    out[2 + n] = 0;
}

} // namespace pvmmu::x86
