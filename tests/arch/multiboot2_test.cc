// The Multiboot 2 boot-information parser of the bare-metal image
// (hypervisor/arch/x86_64/boot/multiboot2.cc), compiled for the host: a loader's
// structure as GRUB lays it out becomes the BootInfo the Multiboot 1 path
// fills, and every malformed one is refused with its reason — never read past
// its end: each structure sits flush against an inaccessible page, so one byte
// too far is a crash, not a pass.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "boot/multiboot.h"

using pvmmu::x86::BootInfo;
using pvmmu::x86::multiboot2_parse;

namespace {

// Builds an information structure tag by tag (Multiboot2 §3.6.2: tags 8-byte
// aligned).
class Mbi {
public:
    Mbi() { u32(0), u32(0); }
    Mbi& tag(uint32_t type, const std::vector<uint8_t>& body)
    {
        return raw_tag(type, uint32_t(8 + body.size()), body);
    }
    // A tag whose size field says `size`, whatever the body.
    Mbi& raw_tag(uint32_t type, uint32_t size, const std::vector<uint8_t>& body)
    {
        while (b_.size() % 8) b_.push_back(0);
        u32(type), u32(size);
        b_.insert(b_.end(), body.begin(), body.end());
        return *this;
    }
    Mbi& end() { return tag(0, {}); }
    // total_size: the bytes built so far, or `total`.
    std::vector<uint8_t> bytes(uint32_t total = 0) const
    {
        std::vector<uint8_t> v = b_;
        const uint32_t t = total ? total : uint32_t(v.size());
        std::memcpy(v.data(), &t, 4);
        return v;
    }

private:
    void u32(uint32_t v) { b_.insert(b_.end(), reinterpret_cast<uint8_t*>(&v), reinterpret_cast<uint8_t*>(&v) + 4); }
    std::vector<uint8_t> b_;
};

void put(std::vector<uint8_t>& v, const void* p, size_t n)
{
    v.insert(v.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
}
std::vector<uint8_t> str(const std::string& s, bool nul = true)
{
    std::vector<uint8_t> v(s.begin(), s.end());
    if (nul) v.push_back(0);
    return v;
}
std::vector<uint8_t> module(uint32_t start, uint32_t end, const std::string& name)
{
    std::vector<uint8_t> v;
    put(v, &start, 4), put(v, &end, 4);
    const auto s = str(name);
    v.insert(v.end(), s.begin(), s.end());
    return v;
}
struct Entry {
    uint64_t base, len;
    uint32_t type;
};
std::vector<uint8_t> memory_map(const std::vector<Entry>& es, uint32_t entry_size = 24)
{
    std::vector<uint8_t> v;
    const uint32_t version = 0;
    put(v, &entry_size, 4), put(v, &version, 4);
    for (const Entry& e : es) {
        // The 24 bytes of a memory map entry (§3.6.8), cut or padded to entry_size.
        std::vector<uint8_t> one(entry_size > 24 ? entry_size : 24, 0);
        std::memcpy(one.data(), &e.base, 8);
        std::memcpy(one.data() + 8, &e.len, 8);
        std::memcpy(one.data() + 16, &e.type, 4);
        v.insert(v.end(), one.begin(), one.begin() + entry_size);
    }
    return v;
}
std::vector<uint8_t> basic_mem(uint32_t lower_kib, uint32_t upper_kib)
{
    std::vector<uint8_t> v;
    put(v, &lower_kib, 4), put(v, &upper_kib, 4);
    return v;
}

// QEMU's 256 MiB machine as SeaBIOS reports it.
const std::vector<Entry> kQemuMap = {
    {0, 0x9fc00, 1}, {0x9fc00, 0x400, 2}, {0xf0000, 0x10000, 2}, {0x100000, 0xfee0000, 1},
};

// Parses `bytes` placed so that its last byte is followed by an unmapped page;
// `avail` = what the parser is told it may read (default: exactly the bytes).
struct Parsed {
    const char* why;
    BootInfo bi;
};
Parsed parse(const std::vector<uint8_t>& bytes, size_t avail = SIZE_MAX)
{
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (bytes.size() + page - 1) / page + 1;
    auto* base = static_cast<uint8_t*>(mmap(nullptr, (data_pages + 1) * page, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    EXPECT_NE(base, MAP_FAILED);
    EXPECT_EQ(mprotect(base + data_pages * page, page, PROT_NONE), 0);
    uint8_t* at = base + data_pages * page - bytes.size();
    std::memcpy(at, bytes.data(), bytes.size());
    Parsed r{nullptr, BootInfo{}};
    r.why = multiboot2_parse(at, avail == SIZE_MAX ? bytes.size() : avail, r.bi);
    munmap(base, (data_pages + 1) * page);
    return r;
}

std::string why(const Parsed& p) { return p.why ? p.why : "(accepted)"; }

} // namespace

// --- malformed structures first ------------------------------------------------

TEST(Multiboot2Parse, StructureOutOfReachIsRefused)
{
    const auto b = Mbi().tag(6, memory_map(kQemuMap)).end().bytes();
    EXPECT_EQ(why(parse(b, 4)), "the information structure is out of reach");
}

TEST(Multiboot2Parse, TotalSizeTooSmallForAnEndTagIsRefused)
{
    EXPECT_EQ(why(parse(Mbi().end().bytes(12))), "total_size is too small for an end tag");
}

TEST(Multiboot2Parse, TotalSizePastWhatMayBeReadIsRefused)
{
    const auto b = Mbi().tag(6, memory_map(kQemuMap)).end().bytes();
    EXPECT_EQ(why(parse(b, b.size() - 8)), "total_size runs past the memory the boot tables map");
}

TEST(Multiboot2Parse, MissingEndTagIsRefused)
{
    EXPECT_EQ(why(parse(Mbi().tag(6, memory_map(kQemuMap)).bytes())), "no end tag before total_size");
}

TEST(Multiboot2Parse, TagSmallerThanItsHeaderIsRefused)
{
    // A size below 8 would make the walk stand still or go backwards.
    const auto b = Mbi().tag(6, memory_map(kQemuMap)).raw_tag(1, 4, {0, 0, 0, 0, 0, 0, 0, 0}).end().bytes();
    EXPECT_EQ(why(parse(b)), "a tag's size is smaller than its header");
}

TEST(Multiboot2Parse, TagRunningPastTotalSizeIsRefused)
{
    auto b = Mbi().tag(6, memory_map(kQemuMap)).raw_tag(1, 0x1000, str("x")).end().bytes();
    EXPECT_EQ(why(parse(b)), "a tag runs past total_size");
    b = Mbi().tag(6, memory_map(kQemuMap)).raw_tag(1, 0xfffffff8, str("x")).end().bytes();
    EXPECT_EQ(why(parse(b)), "a tag runs past total_size");
}

TEST(Multiboot2Parse, EndTagOfAnotherSizeIsRefused)
{
    const auto b = Mbi().tag(6, memory_map(kQemuMap)).raw_tag(0, 16, std::vector<uint8_t>(8, 0)).bytes();
    EXPECT_EQ(why(parse(b)), "the end tag's size is not 8");
}

TEST(Multiboot2Parse, UnterminatedStringsAreRefused)
{
    auto b = Mbi().tag(6, memory_map(kQemuMap)).tag(1, str("vcpus=2", false)).end().bytes();
    EXPECT_EQ(why(parse(b)), "command line tag without a terminating NUL");
    b = Mbi().tag(6, memory_map(kQemuMap)).tag(2, str("GRUB", false)).end().bytes();
    EXPECT_EQ(why(parse(b)), "boot loader name tag without a terminating NUL");
    auto m = module(0x200000, 0x201000, "guest");
    m.pop_back();
    b = Mbi().tag(6, memory_map(kQemuMap)).tag(3, m).end().bytes();
    EXPECT_EQ(why(parse(b)), "module tag too short or its string not terminated");
}

TEST(Multiboot2Parse, ShortModuleTagIsRefused)
{
    const auto b = Mbi().tag(6, memory_map(kQemuMap)).tag(3, {0, 0, 0x20, 0, 0, 0, 0}).end().bytes();
    EXPECT_EQ(why(parse(b)), "module tag too short or its string not terminated");
}

TEST(Multiboot2Parse, BadModuleRangesAreRefused)
{
    auto b = Mbi().tag(6, memory_map(kQemuMap)).tag(3, module(0x300000, 0x200000, "g")).end().bytes();
    EXPECT_EQ(why(parse(b)), "a module ends before it starts");
    b = Mbi().tag(6, memory_map(kQemuMap)).tag(3, module(0x7ffff000, 0x80000000, "g")).end().bytes();
    EXPECT_EQ(why(parse(b)), "a module lies above the first GiB (the boot page tables' window)");
}

TEST(Multiboot2Parse, BadMemoryMapsAreRefused)
{
    auto b = Mbi().tag(6, {24, 0, 0, 0}).end().bytes();
    EXPECT_EQ(why(parse(b)), "memory map tag shorter than its header");
    b = Mbi().tag(6, memory_map(kQemuMap, 16)).end().bytes();
    EXPECT_EQ(why(parse(b)), "memory map entry_size is below 24 or not a multiple of 8");
    b = Mbi().tag(6, memory_map(kQemuMap, 28)).end().bytes();
    EXPECT_EQ(why(parse(b)), "memory map entry_size is below 24 or not a multiple of 8");
    b = Mbi().tag(6, memory_map({{0x100000, 0x1000, 1}, {0xfffffffffffff000, 0x2000, 2}})).end().bytes();
    EXPECT_EQ(why(parse(b)), "a memory map entry wraps around the address space");
    b = Mbi().tag(6, memory_map({{0x100000, 0x1000, 2}})).end().bytes();
    EXPECT_EQ(why(parse(b)), "the memory map has no usable RAM");
    b = Mbi().tag(1, str("")).end().bytes();
    EXPECT_EQ(why(parse(b)), "no memory map (and no basic memory information)");
}

// --- what a well-formed structure gives ------------------------------------------

TEST(Multiboot2Parse, GrubLikeStructureFillsBootInfo)
{
    // As GRUB 2.06 orders it, with tags the parser skips (21: load base
    // address, 14: ACPI RSDP) and a command line whose odd length needs padding.
    const auto b = Mbi()
                       .tag(21, {0, 0, 0x10, 0})
                       .tag(1, str("vcpus=2 frames=8192"))
                       .tag(2, str("GRUB 2.06-13+deb12u2"))
                       .tag(3, module(0x129000, 0x1315a8, "hello vcpus=2 frames=4096"))
                       .tag(3, module(0x132000, 0x140001, "second"))
                       .tag(4, basic_mem(639, 261120))
                       .tag(6, memory_map(kQemuMap))
                       .tag(14, std::vector<uint8_t>(20, 0))
                       .end()
                       .bytes();
    const Parsed p = parse(b);
    ASSERT_EQ(why(p), "(accepted)");
    EXPECT_STREQ(p.bi.protocol, "Multiboot 2");
    EXPECT_STREQ(p.bi.cmdline, "vcpus=2 frames=8192");
    EXPECT_STREQ(p.bi.loader, "GRUB 2.06-13+deb12u2");
    ASSERT_EQ(p.bi.nr_modules, 2u);
    EXPECT_EQ(p.bi.modules[0].start, 0x129000u);
    EXPECT_EQ(p.bi.modules[0].end, 0x1315a8u);
    EXPECT_EQ(p.bi.modules[1].start, 0x132000u);
    EXPECT_EQ(p.bi.modules[1].end, 0x140001u);
    EXPECT_STREQ(p.bi.modules[0].cmdline, "hello vcpus=2 frames=4096");
    EXPECT_STREQ(p.bi.modules[1].cmdline, "second");
    EXPECT_EQ(p.bi.loader_end, 0x141000u);   // above the last module, page aligned
    ASSERT_EQ(p.bi.nr_regions, 4u);
    for (unsigned i = 0; i < 4; ++i) {
        EXPECT_EQ(p.bi.regions[i].base, kQemuMap[i].base) << i;
        EXPECT_EQ(p.bi.regions[i].len, kQemuMap[i].len) << i;
        EXPECT_EQ(p.bi.regions[i].type, kQemuMap[i].type) << i;
    }
    EXPECT_EQ(p.bi.ram_top, 0xffe0000u);
    EXPECT_EQ(p.bi.usable_bytes, 0x9fc00u + 0xfee0000u);
}

TEST(Multiboot2Parse, BasicMemoryStandsInOnlyWithoutAMemoryMap)
{
    const Parsed p = parse(Mbi().tag(4, basic_mem(639, 1024)).end().bytes());
    ASSERT_EQ(why(p), "(accepted)");
    ASSERT_EQ(p.bi.nr_regions, 2u);
    EXPECT_EQ(p.bi.regions[0].base, 0u);
    EXPECT_EQ(p.bi.regions[0].len, 639u << 10);
    EXPECT_EQ(p.bi.regions[1].base, 1u << 20);
    EXPECT_EQ(p.bi.regions[1].len, 1024u << 10);
    EXPECT_EQ(p.bi.ram_top, (1u << 20) + (1024u << 10));

    const Parsed q = parse(Mbi().tag(4, basic_mem(639, 1024)).tag(6, memory_map(kQemuMap)).end().bytes());
    ASSERT_EQ(why(q), "(accepted)");
    EXPECT_EQ(q.bi.nr_regions, 4u);
}

TEST(Multiboot2Parse, LongStringsAreCutNotOverrun)
{
    const std::string long_cmdline(1000, 'a');
    const Parsed p = parse(Mbi().tag(1, str(long_cmdline)).tag(2, str(std::string(100, 'g'))).tag(6, memory_map(kQemuMap)).end().bytes());
    ASSERT_EQ(why(p), "(accepted)");
    EXPECT_EQ(std::string(p.bi.cmdline), std::string(sizeof(p.bi.cmdline) - 1, 'a'));
    EXPECT_EQ(std::string(p.bi.loader), std::string(sizeof(p.bi.loader) - 1, 'g'));
}

TEST(Multiboot2Parse, LongModuleStringIsCut)
{
    const std::string words = "guest " + std::string(300, 'w');
    const Parsed p = parse(Mbi().tag(3, module(0x200000, 0x201000, words)).tag(6, memory_map(kQemuMap)).end().bytes());
    ASSERT_EQ(why(p), "(accepted)");
    EXPECT_EQ(std::string(p.bi.modules[0].cmdline), words.substr(0, sizeof(p.bi.modules[0].cmdline) - 1));
}

TEST(Multiboot2Parse, TagsAfterTheEndTagAreNotRead)
{
    // total_size covers garbage after the end tag: the walk stops at the end.
    auto b = Mbi().tag(6, memory_map(kQemuMap)).end().bytes();
    b.resize(b.size() + 16, 0xff);
    const uint32_t total = uint32_t(b.size());
    std::memcpy(b.data(), &total, 4);
    EXPECT_EQ(why(parse(b)), "(accepted)");
}
