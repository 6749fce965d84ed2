// The image fuzzer's harness; see image_harness.h.
#include "image_harness.h"

#include <cstring>
#include <vector>

#include "pv/elf.h"
#include "pv/place.h"
#include "bzimage.h"
#include "core/domain_builder.h"
#include "core/range.h"
#include "sim/direct_machine.h"

namespace pvmmu::fuzz {

namespace {

// Domains the image is placed in: smaller than a kernel and its boot
// structures, pvmmu's own guests' size, and main.cc's default (frames=16384).
constexpr uint64_t kDomainFrames[] = {64, 1024, 16384};
// The size the core's builder really builds (its memory is allocated).
constexpr uint64_t kBuiltFrames = 1024;

std::string hex(uint64_t v)
{
    char b[48];
    x86::guest_detail_hex(b, v);
    return b;
}

// A domain's memory at its virtual addresses [base, base + size): every
// request recorded and checked; backed by the machine's frames where the
// builder built it, else by a scratch buffer (the bytes are not looked at).
struct RecordingMemory {
    uint64_t base = 0, size = 0;
    uint8_t* frames = nullptr;
    std::vector<uint8_t> scratch;
    std::string failure;
    unsigned writes = 0;

    uint8_t* bytes(uint64_t va, uint64_t n)
    {
        ++writes;
        if (!range_within(va, n, base, size)) {
            if (failure.empty())
                failure = "a write of " + std::to_string(n) + " bytes at " + hex(va) + " outside the domain [" +
                          hex(base) + ", +" + hex(size) + ")";
            return nullptr;
        }
        if (frames) return frames + (va - base);
        if (scratch.size() < n) scratch.resize(n);
        return scratch.data();
    }
};

struct Region {
    const char* name;
    uint64_t va, len;
};

// Everything the loader placed lies inside the domain, and apart.
std::string check_placement(const x86::GuestElf& elf, const x86::GuestPlacement& at, uint64_t nr_frames)
{
    const uint64_t base = elf.virt_base, size = nr_frames << kPageShift, npt = builder_table_frames(nr_frames);
    if (at.first_pt > nr_frames || npt > nr_frames - at.first_pt) return "the page tables past the domain's frames";
    Region r[x86::GuestElf::kMaxSegments + 7];
    unsigned n = 0;
    for (unsigned i = 0; i < elf.nr_segments; ++i) r[n++] = {"a segment", elf.seg[i].vaddr, elf.seg[i].memsz};
    r[n++] = {"the P2M list", at.p2m, nr_frames * sizeof(uint64_t)};
    r[n++] = {"start_info", at.si, kPageSize};
    r[n++] = {"shared_info", at.shared, kPageSize};
    r[n++] = {"the console ring", at.console, kPageSize};
    r[n++] = {"the page tables", base + (at.first_pt << kPageShift), npt << kPageShift};
    r[n++] = {"the stack", at.stack_top - x86::kGuestStackPages * kPageSize, x86::kGuestStackPages * kPageSize};
    for (unsigned i = 0; i < n; ++i) {
        if (!range_within(r[i].va, r[i].len, base, size)) return std::string(r[i].name) + " at " + hex(r[i].va) + " outside the domain";
        for (unsigned j = 0; j < i; ++j)
            if (ranges_overlap(r[i].va, r[i].len, r[j].va, r[j].len))
                return std::string(r[i].name) + " at " + hex(r[i].va) + " overlaps " + r[j].name + " at " + hex(r[j].va);
    }
    bool entry_in = false, hcall_in = !elf.has_hypercall_page;
    for (unsigned i = 0; i < elf.nr_segments; ++i) {
        entry_in |= point_within(elf.entry, elf.seg[i].vaddr, elf.seg[i].memsz);
        hcall_in |= range_within(elf.hypercall_page, kPageSize, elf.seg[i].vaddr, elf.seg[i].memsz);
    }
    if (!entry_in) return "the entry " + hex(elf.entry) + " in no segment";
    if (!hcall_in) return "the hypercall page " + hex(elf.hypercall_page) + " in no segment";
    return {};
}

uint64_t hash(const uint8_t* p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325;
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3;
    return h;
}

// The core's builder on a hosted machine, then the loader's writes into the
// frames it built: none outside them, none into its tables. Empty, or what
// broke. A builder's refusal (a VIRT_BASE in the hypervisor's L4 slots) is
// a refusal: nothing is written.
std::string build_and_write(const x86::GuestElf& elf, const x86::GuestPlacement& at, const uint8_t* file)
{
    sim::DirectMachine m(sim::Arena::kXenFrames + sim::Arena::kIoFrames + kBuiltFrames);
    DomainLayout lay;
    int rc = 0;
    DomainSpec spec;
    Domain d;
    spec.id = 1;
    spec.first = m.arena().allocate(kBuiltFrames);
    spec.nr_frames = kBuiltFrames;
    spec.physmap = Vaddr{elf.virt_base};
    spec.first_pt = at.first_pt;
    rc = build_domain(m.hv(), d, spec, lay);
    if (rc) return {};
    RecordingMemory mem;
    mem.base = elf.virt_base;
    mem.size = kBuiltFrames << kPageShift;
    mem.frames = static_cast<uint8_t*>(m.hv().mem().frame(lay.first));
    const uint8_t* tables = static_cast<const uint8_t*>(m.hv().mem().frame(lay.mfn(lay.first_pt)));
    const uint64_t before = hash(tables, lay.nr_pt_frames << kPageShift);
    const bool ok = x86::guest_write_image(elf, at, file, lay.first.v, mem);
    if (!mem.failure.empty()) return mem.failure;
    if (!ok) return "guest_write_image refused a range with no failure recorded";
    if (hash(tables, lay.nr_pt_frames << kPageShift) != before) return "the loader wrote into the builder's page tables";
    return {};
}

void fail(ImageOutcome& o, const std::string& why, uint64_t nr_frames)
{
    if (!o.ok) return;
    o.ok = false;
    o.failure = why + " (a domain of " + std::to_string(nr_frames) + " frames)";
}

} // namespace

ImageOutcome run_image_input(const uint8_t* data, size_t size)
{
    ImageOutcome o;
    const std::vector<uint8_t> file(data, data + size);
    std::vector<uint8_t> unpacked;
    std::string why;
    const uint8_t* image = data;
    size_t image_size = size;
    switch (run::bzimage_unpack(file, unpacked, why, kImageUnpackCap)) {
    case run::BzImage::NotOne: break;
    case run::BzImage::Refused:
        if (!unpacked.empty()) fail(o, "a refused bzImage left " + std::to_string(unpacked.size()) + " bytes", 0);
        return o;
    case run::BzImage::Unpacked:
        if (unpacked.size() > kImageUnpackCap) fail(o, "a bzImage unpacked past its cap", 0);
        image = unpacked.data();
        image_size = unpacked.size();
        break;
    }

    x86::GuestElf elf;
    if (!x86::guest_elf_parse(image, image_size, elf)) {
        if (!elf.error) fail(o, "a refused image without a reason", 0);
        return o;
    }
    for (uint64_t nr_frames : kDomainFrames) {
        x86::GuestPlacement at;
        if (!x86::guest_place(elf, nr_frames, at)) {
            if (!at.error) fail(o, "a refused placement without a reason", nr_frames);
            continue;
        }
        ++o.accepted;
        if (std::string bad = check_placement(elf, at, nr_frames); !bad.empty()) fail(o, bad, nr_frames);
        if (nr_frames == kBuiltFrames) {
            if (std::string bad = build_and_write(elf, at, image); !bad.empty()) fail(o, bad, nr_frames);
        } else {
            RecordingMemory mem;
            mem.base = elf.virt_base;
            mem.size = nr_frames << kPageShift;
            (void)x86::guest_write_image(elf, at, image, 0x100, mem);
            if (!mem.failure.empty()) fail(o, mem.failure, nr_frames);
        }
    }
    return o;
}

} // namespace pvmmu::fuzz
