// The loader's placement of a guest kernel (pv/place.h) after its
// reader (pv/elf.h), compiled for the host and run against a fake
// domain memory that records every write: each hostile shape is refused with
// a message naming what is wrong, before a byte is written; an accepted image
// writes only inside the domain's frames (docs/security.md, "Loader range
// checks").
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "pv/elf.h"
#include "pv/place.h"
#include "guest_image.h"

namespace pvmmu::x86 {
namespace {

using test::Image;
using test::kBase;
using test::kText;

// A domain's memory, [base, base + size) at its virtual addresses: every
// request recorded, one outside it refused (and remembered).
struct RecordingMemory {
    uint64_t base = 0, size = 0;
    std::vector<uint8_t> bytes_;
    std::vector<std::pair<uint64_t, uint64_t>> writes;
    bool outside = false;

    uint8_t* bytes(uint64_t va, uint64_t n)
    {
        writes.emplace_back(va, n);
        if (!range_within(va, n, base, size)) {
            outside = true;
            return nullptr;
        }
        return bytes_.data() + (va - base);
    }
};

struct Loaded {
    bool ok = false;
    std::string error;
    GuestElf elf;
    GuestPlacement at;
    RecordingMemory mem;
};

// What guest_loader.cc does, on the fake memory: read, place, and only then
// write (it builds the domain in between).
Loaded load(const std::vector<uint8_t>& file, uint64_t nr_frames = 1024, const std::vector<uint8_t>& module = {})
{
    Loaded r;
    const auto refused = [&](const char* why, const char* detail) {
        r.error = std::string(why) + (*detail ? std::string(": ") + detail : "");
        return r;
    };
    if (!guest_elf_parse(file.data(), file.size(), r.elf)) return refused(r.elf.error, r.elf.detail);
    if (!guest_place(r.elf, nr_frames, r.at, module.size())) return refused(r.at.error, r.at.detail);
    r.mem.base = r.elf.virt_base;
    r.mem.size = nr_frames << kPageShift;
    r.mem.bytes_.assign(r.mem.size, 0);
    if (!guest_write_image(r.elf, r.at, file.data(), 0x1000, r.mem, module.empty() ? nullptr : module.data()))
        return refused("a write outside the domain", "");
    r.ok = true;
    return r;
}

void expect_refused(const std::vector<uint8_t>& file, const std::string& error)
{
    const Loaded r = load(file);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, error);
    EXPECT_TRUE(r.mem.writes.empty()) << r.mem.writes.size() << " writes, the first at 0x" << std::hex
                                      << r.mem.writes[0].first;
}

TEST(GuestPlace, WrappingHypercallPageIsRefusedBeforeAnyWrite)
{
    Image img;
    img.hypercall = 0xfffffffffffff000;   // + 4 KiB wraps to 0: inside every bound written as a sum
    expect_refused(img.build(), "XEN_ELFNOTE_HYPERCALL_PAGE is not a page of a loadable segment: 0xfffffffffffff000");
}

TEST(GuestPlace, LegacyHypercallPageNumberThatWrapsIsRefused)
{
    // VIRT_BASE + (2^52 + 0x200) * 4 KiB is kText modulo 2^64.
    Image img;
    img.with_notes = false;
    img.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000,ELF_PADDR_OFFSET=0x8000000000,"
                 "HYPERCALL_PAGE=0x10000000000200";
    expect_refused(img.build(), "HYPERCALL_PAGE of the __xen_guest string is past the address space: 0x10000000000200");
}

TEST(GuestPlace, HypercallPageOutsideEverySegmentIsRefused)
{
    Image img;
    img.hypercall = kText + 0x10000;   // page aligned, inside the domain, in no segment
    expect_refused(img.build(), "XEN_ELFNOTE_HYPERCALL_PAGE is not a page of a loadable segment: 0x8000210000");
}

TEST(GuestPlace, HypercallPageNotPageAlignedIsRefused)
{
    Image img;
    img.hypercall = kText + 8;
    expect_refused(img.build(), "XEN_ELFNOTE_HYPERCALL_PAGE is not a page of a loadable segment: 0x8000200008");
}

TEST(GuestPlace, EntryOutsideEverySegmentIsRefused)
{
    Image img;
    img.entry = kText + 0x5000;
    expect_refused(img.build(), "XEN_ELFNOTE_ENTRY is not in a loadable segment: 0x8000205000");
    img.entry = ~0ull;
    expect_refused(img.build(), "XEN_ELFNOTE_ENTRY is not in a loadable segment: 0xffffffffffffffff");
}

TEST(GuestPlace, OverlappingSegmentsAreRefused)
{
    // The legacy string instead of notes frees the second program header
    // for a PT_LOAD over the second half of the first (memsz 8 KiB).
    Image img;
    img.with_notes = false;
    img.legacy = "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x8000000000,ELF_PADDR_OFFSET=0x8000000000,"
                 "HYPERCALL_PAGE=0x200";
    img.build();
    img.ph(1) = img.ph(0);
    img.ph(1).p_paddr = img.ph(1).p_vaddr = kText + 0x1000;
    expect_refused(img.bytes, "two loadable segments overlap");
}

TEST(GuestPlace, SegmentPastTheFileIsRefused)
{
    Image img;
    img.build();
    img.ph(0).p_filesz = img.bytes.size() - img.ph(0).p_offset + 1;
    img.ph(0).p_memsz = img.ph(0).p_filesz;
    expect_refused(img.bytes, "a segment outside the file");
    img.ph(0).p_filesz = img.ph(0).p_memsz = ~0ull - img.ph(0).p_offset + 1;   // offset + filesz wraps to 0
    expect_refused(img.bytes, "a segment outside the file");
}

TEST(GuestPlace, NoteWhoseSizeRunsPastItsSegmentIsRefused)
{
    Image img;
    img.build();
    // The first note's descsz: 8 bytes, then 2^32 - 4, which rounded up to 4
    // would wrap a 32-bit sum to 0.
    uint32_t descsz = 0xfffffffc;
    std::memcpy(img.bytes.data() + Image::kNoteOff + 4, &descsz, 4);
    expect_refused(img.bytes, "a note runs past its segment");
}

TEST(GuestPlace, VirtBaseAboveTheImageIsRefused)
{
    // VIRT_BASE a GiB above, PADDR_OFFSET with it: the segment stays at kText.
    Image high;
    high.virt_base = kBase + (1ull << 30);
    high.build();
    expect_refused(high.bytes, "XEN_ELFNOTE_VIRT_BASE is above the image's first segment: 0x8040000000");
}

TEST(GuestPlace, PaddrOffsetAboveVirtBaseIsRefused)
{
    Image img;
    img.build();
    // The notes are ENTRY, HYPERCALL_PAGE, VIRT_BASE, PADDR_OFFSET first
    // (24 bytes each: header, "Xen", 8 bytes); PADDR_OFFSET's value is the
    // fourth's last 8.
    const uint64_t above = kBase + 0x1000;
    std::memcpy(img.bytes.data() + Image::kNoteOff + 3 * 24 + 16, &above, 8);
    expect_refused(img.bytes, "XEN_ELFNOTE_PADDR_OFFSET is above XEN_ELFNOTE_VIRT_BASE: 0x8000001000");
}

TEST(GuestPlace, VirtBaseNotGibAlignedIsRefused)
{
    Image img;
    img.virt_base = kBase + 0x200000;   // PADDR_OFFSET with it: the segment stays at kText
    expect_refused(img.build(), "XEN_ELFNOTE_VIRT_BASE is not 1 GiB aligned, as pvmmu's physmap must be: 0x8000200000");
}

TEST(GuestPlace, ValidImageWritesOnlyInsideTheDomain)
{
    Image img;
    const Loaded r = load(img.build());
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.mem.outside);
    ASSERT_EQ(r.mem.writes.size(), 3u);   // the segment, the hypercall page, the P2M list
    EXPECT_EQ(r.mem.writes[0], std::make_pair(kText, uint64_t(4096)));
    EXPECT_EQ(r.mem.writes[1], std::make_pair(kText, kPageSize));
    EXPECT_EQ(r.mem.writes[2], std::make_pair(r.elf.image_end, uint64_t(1024 * 8)));
    // Stub 1 is `mov $1, %eax` at +3 (push %rcx; push %r11 before it).
    EXPECT_EQ(r.mem.bytes_[kText - kBase + 32 + 3], 0xb8);
    EXPECT_EQ(r.mem.bytes_[kText - kBase + 32 + 4], 1);
    // start_info, the stack's top and the tables inside the domain.
    EXPECT_TRUE(range_within(r.at.si, kPageSize, kBase, 1024 * kPageSize));
    EXPECT_TRUE(range_within(r.at.stack_top - kPageSize, kPageSize, kBase, 1024 * kPageSize));
    EXPECT_EQ(r.at.first_pt, 0u);
}

TEST(GuestPlace, DomainTooSmallForTheImageIsRefusedBeforeAnyWrite)
{
    Image img;
    const Loaded r = load(img.build(), 8);
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "the image and its boot structures do not fit the domain's memory");
    EXPECT_TRUE(r.mem.writes.empty());
}

// xl.cfg's `ramdisk =`: the initial module right after the image (xen.h's
// start-of-day layout), its bytes where start_info's mod_start will say, the
// P2M list and start_info after its last page.
TEST(GuestPlace, InitialModuleLandsAfterTheImageBeforeTheP2mList)
{
    Image img;
    std::vector<uint8_t> module(3 * kPageSize + 100);
    for (size_t i = 0; i < module.size(); ++i) module[i] = uint8_t(i * 7 + 1);
    const Loaded r = load(img.build(), 1024, module);
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.mem.outside);
    EXPECT_EQ(r.at.module, r.elf.image_end);
    EXPECT_EQ(r.at.module_len, module.size());
    EXPECT_EQ(r.at.p2m, r.elf.image_end + 4 * kPageSize);   // the module's 4 pages, the last one partly
    EXPECT_EQ(r.at.si, r.at.p2m + 2 * kPageSize);           // 1024 entries of 8 bytes: two pages
    ASSERT_EQ(r.mem.writes.size(), 4u);   // the segment, the hypercall page, the module, the P2M list
    EXPECT_EQ(r.mem.writes[2], std::make_pair(r.at.module, uint64_t(module.size())));
    EXPECT_EQ(r.mem.writes[3], std::make_pair(r.at.p2m, uint64_t(1024 * 8)));
    const uint8_t* at = r.mem.bytes_.data() + (r.at.module - kBase);
    EXPECT_EQ(std::vector<uint8_t>(at, at + module.size()), module);
    EXPECT_EQ(at[module.size()], 0);   // the rest of its last page: zero
    uint64_t mfn0 = 0;
    std::memcpy(&mfn0, r.mem.bytes_.data() + (r.at.p2m - kBase), 8);
    EXPECT_EQ(mfn0, 0x1000u);
}

TEST(GuestPlace, NoModuleLeavesTheP2mListAtTheImageEnd)
{
    Image img;
    const Loaded r = load(img.build());
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.at.module, 0u);
    EXPECT_EQ(r.at.module_len, 0u);
    EXPECT_EQ(r.at.p2m, r.elf.image_end);
}

TEST(GuestPlace, ModuleLargerThanTheDomainIsRefusedBeforeAnyWrite)
{
    Image img;
    GuestElf elf;
    const std::vector<uint8_t> file = img.build();
    ASSERT_TRUE(guest_elf_parse(file.data(), file.size(), elf));
    GuestPlacement at;
    EXPECT_FALSE(guest_place(elf, 1024, at, ~0ull));   // its page count would wrap
    EXPECT_STREQ(at.error, "the initial module is larger than the domain's memory");
    EXPECT_FALSE(guest_place(elf, 1024, at, (1024 << kPageShift) + 1));
    EXPECT_STREQ(at.error, "the initial module is larger than the domain's memory");
}

TEST(GuestPlace, ModuleThatLeavesNoRoomForTheBootStructuresIsRefused)
{
    Image img;
    // Fits the memory, but not with the image before it and the P2M list,
    // start_info and the rest after it.
    const Loaded r = load(img.build(), 1024, std::vector<uint8_t>(1000 * kPageSize, 1));
    EXPECT_FALSE(r.ok);
    EXPECT_EQ(r.error, "the image and its boot structures do not fit the domain's memory");
    EXPECT_TRUE(r.mem.writes.empty());
}

} // namespace
} // namespace pvmmu::x86
