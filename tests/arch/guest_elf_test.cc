// The bare-metal hypervisor's reader of guest kernels (pv/elf.h),
// compiled for the host: every malformed image is refused with a reason and
// nothing is read outside the file (the unit label also runs under ASan).
#include <gtest/gtest.h>

#include <elf.h>

#include <cstring>
#include <string>
#include <vector>

#include <pvmmu/abi.h>
#include <xen/elfnote.h>

#include "guest_image.h"
#include "pv/elf.h"

namespace pvmmu::x86 {
namespace {

using test::Image;
using test::kBase;
using test::kText;

bool parse(const std::vector<uint8_t>& b, GuestElf& out) { return guest_elf_parse(b.data(), b.size(), out); }

TEST(GuestElf, TruncatedImagesAreRefusedAtEveryLength)
{
    Image img;
    const std::vector<uint8_t> full = img.build();
    // Past the notes everything that matters is in place; shorter is refused.
    for (size_t n = 0; n < Image::kNoteOff + 16; ++n) {
        std::vector<uint8_t> cut(full.begin(), full.begin() + long(n));   // exact size: ASan sees overreads
        GuestElf out;
        EXPECT_FALSE(parse(cut, out)) << "length " << n;
        EXPECT_NE(out.error, nullptr) << "length " << n;
    }
}

TEST(GuestElf, HeaderThatIsNotAnX86_64ExecutableIsRefused)
{
    for (int what = 0; what < 4; ++what) {
        Image img;
        img.build();
        if (what == 0) img.bytes[0] = 0;
        if (what == 1) img.eh().e_ident[EI_CLASS] = ELFCLASS32;
        if (what == 2) img.eh().e_machine = EM_386;
        if (what == 3) img.eh().e_type = ET_DYN;
        GuestElf out;
        EXPECT_FALSE(parse(img.bytes, out)) << what;
    }
}

TEST(GuestElf, ProgramHeadersOrSegmentsOutsideTheFileAreRefused)
{
    Image a;
    a.build();
    a.eh().e_phoff = a.bytes.size() - 8;
    GuestElf out;
    EXPECT_FALSE(parse(a.bytes, out));
    EXPECT_STREQ(out.error, "program headers outside the file");

    Image b;
    b.build();
    b.ph(0).p_filesz = b.bytes.size();   // runs past the end from its offset
    b.ph(0).p_memsz = b.ph(0).p_filesz;
    EXPECT_FALSE(parse(b.bytes, out));
    EXPECT_STREQ(out.error, "a segment outside the file");

    Image c;
    c.build();
    c.ph(0).p_filesz = c.ph(0).p_memsz + 1;
    EXPECT_FALSE(parse(c.bytes, out));
    EXPECT_STREQ(out.error, "a segment outside the file");

    Image d;
    d.build();
    d.ph(1).p_filesz = 1u << 20;
    EXPECT_FALSE(parse(d.bytes, out));
    EXPECT_STREQ(out.error, "notes outside the file");
}

TEST(GuestElf, SegmentsThatWrapOrLeaveTheCanonicalRangeAreRefused)
{
    for (uint64_t vaddr : {0xfffffffffffff000ull, 0x00007ffffffff000ull, 0x0000800000000000ull}) {
        Image img;
        img.build();
        img.ph(0).p_paddr = vaddr;   // + VIRT_BASE - PADDR_OFFSET = vaddr
        GuestElf out;
        EXPECT_FALSE(parse(img.bytes, out)) << std::hex << vaddr;
        EXPECT_STREQ(out.error, "a segment outside the address space");
    }
}

TEST(GuestElf, NoteRunningPastItsSegmentIsRefused)
{
    Image img;
    img.build();
    // The first note's descsz grows past the PT_NOTE segment.
    reinterpret_cast<uint32_t*>(img.bytes.data() + Image::kNoteOff)[1] = 4096;
    GuestElf out;
    EXPECT_FALSE(parse(img.bytes, out));
    EXPECT_STREQ(out.error, "a note runs past its segment");
}

// Xen's loader's defaults: ENTRY is e_entry; a segment goes to
// p_paddr + VIRT_BASE - PADDR_OFFSET, PADDR_OFFSET 0 when absent.
TEST(GuestElf, MissingEntryNoteIsTheElfEntry)
{
    Image img;
    img.with_entry = false;
    img.entry = kText + 0x40;
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.entry, kText + 0x40);
}

TEST(GuestElf, SegmentsGoToPaddrPlusVirtBaseMinusPaddrOffset)
{
    Image img;
    img.with_paddr_offset = false;   // as a kernel whose p_paddr is its offset from VIRT_BASE
    img.build();
    img.ph(0).p_paddr = 0x200000;
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.paddr_offset, 0u);
    EXPECT_EQ(out.seg[0].vaddr, kText);
    EXPECT_EQ(out.image_end, kText + 8192);
}

// A kernel linked at 0 without VIRT_BASE or PADDR_OFFSET notes
// (both default to 0, as on Xen) is accepted; the loader puts the boot
// structures after it (pv/loader.cc).
TEST(GuestElf, KernelLinkedAtZeroWithoutVirtBaseIsAccepted)
{
    Image img;
    img.with_virt_base = img.with_paddr_offset = img.with_entry = false;
    img.entry = 0x1040;
    img.hypercall = 0x1000;
    img.build();
    img.ph(0).p_vaddr = img.ph(0).p_paddr = 0x1000;
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.virt_base, 0u);
    EXPECT_EQ(out.paddr_offset, 0u);
    EXPECT_EQ(out.entry, 0x1040u);
    EXPECT_EQ(out.seg[0].vaddr, 0x1000u);
    EXPECT_EQ(out.image_start, 0x1000u);
    EXPECT_EQ(out.image_end, 0x3000u);
}

// libelf's elf_xen_note_check: Xen loads a PV kernel only with its notes
// (or the legacy section), LOADER "generic" or GUEST_OS "linux", and
// XEN_VERSION "xen-3.0" (prefixes).
TEST(GuestElf, KernelXenWouldRefuseIsRefused)
{
    GuestElf out;
    Image none;
    none.with_notes = false;
    none.build();
    EXPECT_FALSE(parse(none.bytes, out));
    EXPECT_STREQ(out.error, "not a Xen kernel: no Xen ELF note and no __xen_guest section");

    Image other_os;
    other_os.loader = "";
    other_os.guest_os = "pvmmu";
    other_os.build();
    EXPECT_FALSE(parse(other_os.bytes, out));
    EXPECT_STREQ(out.error, "neither LOADER \"generic\" nor GUEST_OS \"linux\" (Xen loads no other)");

    Image linux_os;
    linux_os.loader = "";
    linux_os.guest_os = "linux";
    linux_os.build();
    EXPECT_TRUE(parse(linux_os.bytes, out)) << out.error;

    Image old_xen;
    old_xen.xen_version = "xen-2.0";
    old_xen.build();
    EXPECT_FALSE(parse(old_xen.bytes, out));
    EXPECT_STREQ(out.error, "XEN_VERSION is not \"xen-3.0\" (Xen loads no other)");

    Image no_version;
    no_version.xen_version = "";
    no_version.build();
    EXPECT_FALSE(parse(no_version.bytes, out));
}

TEST(GuestElf, MissingHypercallPageNoteIsAccepted)
{
    Image img;
    img.with_hypercall = false;
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_FALSE(out.has_hypercall_page);
}

// The legacy __xen_guest string, read when there are no notes: VIRT_BASE,
// ELF_PADDR_OFFSET (default VIRT_BASE there), HYPERCALL_PAGE a page number
// from VIRT_BASE, FEATURES with the notes' syntax; unknown names skipped.
TEST(GuestElf, LegacyXenGuestSectionIsRead)
{
    Image img;
    img.with_notes = false;
    img.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000,ELF_PADDR_OFFSET=0x8000000000,"
                 "HYPERCALL_PAGE=0x200,LOADER=generic,PAE=yes,FEATURES=writable_page_tables|!pae_pgdir_above_4gb";
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.virt_base, kBase);
    EXPECT_EQ(out.paddr_offset, kBase);
    EXPECT_TRUE(out.has_hypercall_page);
    EXPECT_EQ(out.hypercall_page, kBase + 0x200 * 4096);
    EXPECT_EQ(out.entry, kText + 0x100);   // e_entry
    EXPECT_EQ(out.seg[0].vaddr, kText);

    Image no_offset = img;
    no_offset.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000";
    no_offset.build();
    ASSERT_TRUE(parse(no_offset.bytes, out)) << out.error;
    EXPECT_EQ(out.paddr_offset, kBase);   // the legacy default: VIRT_BASE
    EXPECT_FALSE(out.has_hypercall_page);

    Image required = img;
    required.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,FEATURES=!auto_translated_physmap";
    required.build();
    EXPECT_FALSE(parse(required.bytes, out));
    EXPECT_STREQ(out.detail, "auto_translated_physmap");

    Image bad = img;
    bad.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x80zz";
    bad.build();
    EXPECT_FALSE(parse(bad.bytes, out));
    EXPECT_STREQ(out.error, "a number of the __xen_guest string is malformed");

    Image not_linux = img;
    not_linux.legacy = "GUEST_OS=plan9,XEN_VER=xen-3.0";
    not_linux.build();
    EXPECT_FALSE(parse(not_linux.bytes, out));
}

// The section headers sit at the end of the file: every cut of it loses
// them or the section, and is refused without a read outside the file
// (the unit label runs under ASan too).
TEST(GuestElf, TruncatedLegacyImagesAreRefusedAtEveryLength)
{
    Image img;
    img.with_notes = false;
    img.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000,ELF_PADDR_OFFSET=0x8000000000";
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    for (size_t n = 0; n < img.bytes.size(); ++n) {
        std::vector<uint8_t> cut(img.bytes.begin(), img.bytes.begin() + n);
        EXPECT_FALSE(guest_elf_parse(cut.data(), cut.size(), out)) << n;
    }
}

// Notes win: with any Xen note, the section is not read (as Xen's loader).
TEST(GuestElf, LegacySectionIsIgnoredWhenThereAreNotes)
{
    Image img;
    img.legacy = "GUEST_OS=plan9,XEN_VER=xen-1.0,VIRT_BASE=0x1000";
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.virt_base, kBase);
}

TEST(GuestElf, SectionHeadersOutsideTheFileAreRefusedWithoutNotes)
{
    Image img;
    img.with_notes = false;
    img.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0";
    img.build();
    for (unsigned field = 0; field < 3; ++field) {
        Image bad = img;
        bad.build();
        Elf64_Shdr* sh = reinterpret_cast<Elf64_Shdr*>(bad.bytes.data() + bad.eh().e_shoff);
        if (field == 0) bad.eh().e_shoff = bad.bytes.size() - 8;
        if (field == 1) sh[1].sh_size = 1ull << 40;
        if (field == 2) sh[2].sh_offset = bad.bytes.size();
        GuestElf out;
        EXPECT_FALSE(parse(bad.bytes, out)) << field;
    }
}

TEST(GuestElf, RequiredFeaturePvmmuLacksIsRefusedOptionalOneIgnored)
{
    Image req;
    req.features = "writable_descriptor_tables|!auto_translated_physmap";
    req.build();
    GuestElf out;
    EXPECT_FALSE(parse(req.bytes, out));
    EXPECT_STREQ(out.error, "the guest requires a feature pvmmu does not have");
    EXPECT_STREQ(out.detail, "auto_translated_physmap");

    Image linux_notes;   // Debian's Linux 6.1: writable page tables required (pv/ptwr.cc)
    linux_notes.features = "!writable_page_tables|pae_pgdir_above_4gb";
    linux_notes.build();
    EXPECT_TRUE(parse(linux_notes.bytes, out)) << out.error;

    Image unknown;   // a name Xen's loader does not know either
    unknown.features = "!no_such_feature_of_any_hypervisor_at_all_even_longer_than_the_buffer";
    unknown.build();
    EXPECT_FALSE(parse(unknown.bytes, out));
    EXPECT_EQ(std::strlen(out.detail), sizeof(out.detail) - 1);   // cut, terminated

    Image xen_style;   // Xen's syntax: '|' between names, '!' on the required ones
    xen_style.features = "!pae_pgdir_above_4gb|writable_page_tables|!mmu_pt_update_preserve_ad";
    xen_style.build();
    EXPECT_TRUE(parse(xen_style.bytes, out)) << out.error;

    Image opt;
    opt.features = "writable_page_tables|!mmu_pt_update_preserve_ad";
    opt.build();
    EXPECT_TRUE(parse(opt.bytes, out)) << out.error;
}

TEST(GuestElf, ValidImageGivesItsNotesAndSegments)
{
    Image img;
    img.build();
    GuestElf out;
    ASSERT_TRUE(parse(img.bytes, out)) << out.error;
    EXPECT_EQ(out.entry, kText + 0x100);
    EXPECT_EQ(out.hypercall_page, kText);
    EXPECT_EQ(out.virt_base, kBase);
    ASSERT_EQ(out.nr_segments, 1u);
    EXPECT_EQ(out.seg[0].vaddr, kText);
    EXPECT_EQ(out.seg[0].memsz, 8192u);
    EXPECT_EQ(out.seg[0].filesz, 4096u);
    EXPECT_EQ(out.image_end, kText + 8192);
    EXPECT_EQ(out.error, nullptr);
}

} // namespace
} // namespace pvmmu::x86
