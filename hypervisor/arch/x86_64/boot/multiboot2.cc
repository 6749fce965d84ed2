// Multiboot 2 boot information (Multiboot2 Specification 2.0, §3.6 "Boot
// information format") → BootInfo, by the same rules as Multiboot 1
// (boot/boot_info.cc). Everything in it is loader input: every tag's size, its
// alignment and its strings are checked against the structure's total_size
// and the bytes that may be read, before a field is used; nothing is read
// past the structure. Plain C++ on a byte buffer (no machine access), so
// tests/arch/ runs it on the host with malformed tags.
#include <string.h>

#include "boot/multiboot.h"

namespace pvmmu::x86 {

namespace {

// §3.6.2 "Basic tags structure": the fixed part, then tags, each starting
// 8-byte aligned.
struct Mb2Fixed {
    uint32_t total_size, reserved;
};
struct Mb2Tag {
    uint32_t type, size;   // size counts this header, not the padding after
};
static_assert(sizeof(Mb2Fixed) == 8 && sizeof(Mb2Tag) == 8);

// Tag types (§3.6.3-§3.6.9): the ones pvmmu reads; the others are skipped.
enum : uint32_t {
    kTagEnd = 0, kTagCmdline = 1, kTagLoaderName = 2, kTagModule = 3, kTagBasicMem = 4,
    kTagMmap = 6,
};

// §3.6.6 "Modules": [mod_start, mod_end), then the module's own string.
struct Mb2Module {
    uint32_t mod_start, mod_end;
};
// §3.6.3 "Basic memory information": lower memory below 1 MiB and upper
// memory from 1 MiB, in KiB.
struct Mb2BasicMem {
    uint32_t mem_lower, mem_upper;
};
// §3.6.8 "Memory map": entry_size (a multiple of 8) and entry_version head
// the entries.
struct Mb2MmapHead {
    uint32_t entry_size, entry_version;
};
struct Mb2MmapEntry {
    uint64_t base_addr, length;
    uint32_t type, reserved;   // the E820 types (1 usable, 3 ACPI, 4 NVS, 5 bad)
};
static_assert(sizeof(Mb2MmapEntry) == 24);

constexpr uint64_t kTagAlign = 8;

template <class T>
T load(const uint8_t* p)
{
    T v;
    memcpy(&v, p, sizeof(T));
    return v;
}

// True when [p, p + n) holds a NUL: a string that ends inside its tag.
bool terminated(const uint8_t* p, uint64_t n)
{
    for (uint64_t i = 0; i < n; ++i)
        if (p[i] == 0) return true;
    return false;
}

const char* parse_mmap(const uint8_t* body, uint64_t len, BootInfo& bi)
{
    if (len < sizeof(Mb2MmapHead)) return "memory map tag shorter than its header";
    const Mb2MmapHead h = load<Mb2MmapHead>(body);
    if (h.entry_size < sizeof(Mb2MmapEntry) || h.entry_size % 8)
        return "memory map entry_size is below 24 or not a multiple of 8";
    for (uint64_t off = sizeof(h); off + h.entry_size <= len; off += h.entry_size) {
        const Mb2MmapEntry e = load<Mb2MmapEntry>(body + off);
        if (const char* why = boot_info_add_region(bi, e.base_addr, e.length, e.type)) return why;
    }
    return nullptr;
}

// What the walk gathers besides BootInfo: basic memory, used only when the
// structure has no memory map.
struct Extra {
    bool basic = false;
    Mb2BasicMem mem{};
};

// One tag's body, [body, body + len), already inside the structure.
const char* parse_tag(uint32_t type, const uint8_t* body, uint64_t len, BootInfo& bi, Extra& x)
{
    switch (type) {
    case kTagCmdline:
        if (!terminated(body, len)) return "command line tag without a terminating NUL";
        boot_info_set_cmdline(bi, reinterpret_cast<const char*>(body), len);
        return nullptr;
    case kTagLoaderName:
        if (!terminated(body, len)) return "boot loader name tag without a terminating NUL";
        boot_info_set_loader(bi, reinterpret_cast<const char*>(body), len);
        return nullptr;
    case kTagModule: {
        if (len < sizeof(Mb2Module) || !terminated(body + sizeof(Mb2Module), len - sizeof(Mb2Module)))
            return "module tag too short or its string not terminated";
        const Mb2Module m = load<Mb2Module>(body);
        return boot_info_add_module(bi, m.mod_start, m.mod_end, reinterpret_cast<const char*>(body + sizeof(m)),
                                    len - sizeof(m));
    }
    case kTagBasicMem:
        if (len < sizeof(Mb2BasicMem)) return "basic memory tag too short";
        x.mem = load<Mb2BasicMem>(body);
        x.basic = true;
        return nullptr;
    case kTagMmap:
        return parse_mmap(body, len, bi);
    }
    return nullptr;   // tags a kernel does not know are skipped (§3.6.2)
}

} // namespace

const char* multiboot2_parse(const uint8_t* mbi, uint64_t avail, BootInfo& bi)
{
    bi.protocol = "Multiboot 2";
    if (avail < sizeof(Mb2Fixed)) return "the information structure is out of reach";
    const uint64_t total = load<Mb2Fixed>(mbi).total_size;
    if (total < sizeof(Mb2Fixed) + sizeof(Mb2Tag)) return "total_size is too small for an end tag";
    if (total > avail) return "total_size runs past the memory the boot tables map";

    Extra x;
    bool end = false;
    for (uint64_t off = sizeof(Mb2Fixed); !end;) {
        if (off + sizeof(Mb2Tag) > total) return "no end tag before total_size";
        const Mb2Tag t = load<Mb2Tag>(mbi + off);
        if (t.size < sizeof(Mb2Tag)) return "a tag's size is smaller than its header";
        if (t.size > total - off) return "a tag runs past total_size";
        if (t.type == kTagEnd) {
            if (t.size != sizeof(Mb2Tag)) return "the end tag's size is not 8";
            end = true;
        } else if (const char* why = parse_tag(t.type, mbi + off + sizeof(t), t.size - sizeof(t), bi, x)) {
            return why;
        }
        off = (off + t.size + kTagAlign - 1) & ~(kTagAlign - 1);
    }
    // Only a loader without a memory map: the two ranges basic memory names.
    if (bi.nr_regions == 0 && x.basic) {
        (void)boot_info_add_region(bi, 0, uint64_t(x.mem.mem_lower) << 10, uint32_t(MemType::Usable));
        (void)boot_info_add_region(bi, 1u << 20, uint64_t(x.mem.mem_upper) << 10, uint32_t(MemType::Usable));
    }
    if (bi.nr_regions == 0) return "no memory map (and no basic memory information)";
    return boot_info_finish(bi);
}

} // namespace pvmmu::x86
