// The hostile guest's memory (docs/security.md §7.10): what it plays with,
// and what it keeps out of reach of its own random requests.
//
// Out of reach: the live page tables the builder made (gpfns 0 .. nr_pt - 1,
// the L4 pinned, every vCPU on it), its image, stack and boot structures.
// No random request names a live table as the entry to change, as a table to
// link below another, as a base pointer other than itself, or as a table to
// unpin; no random update_va_mapping names an address they map; no random
// pointer points at the guest's own writable memory (args.cc).
//
// To play with, from the top of its memory down (F = nr_pages):
//   F-1           text: console_io's bytes, end of memory after it
//   F-2           hole A: unmapped
//   F-18 .. F-3   region A: pool A, 15 writable frames that every random
//                 pointer, request array and stored byte goes to, but F-10,
//                 hole B, unmapped
//   F-34 .. F-19  pool B: 16 frames read-only in the physmap, so they can
//                 become page tables: random entries (op_write_pool_b),
//                 pinned, linked, unpinned at random
//   F-35 .. F-38  the playground's L3, L2, code L1 and scratch L1, read-only
//   F-39, F-40    the code pages, mapped at kCodeVa
//   F-41          the LDT page: null, DPL-3 data, the same not present,
//                 DPL-3 64-bit code, then null; read-only in the physmap,
//                 so MMUEXT_SET_LDT takes it (until a random entry maps it
//                 writable) and selectors with TI = 1 load through it
// The playground is L4 slot 255: its L3's entry 511 links its L2, whose
// entry 511 links the code L1, which maps the code pages at 0x7fffffffe000
// and 0x7ffffffff000 (read-only, executable; a SYSCALL in the last 2 bytes
// of each, a RET at the start of the second). Those three entries stay as
// they are; every other entry of the L3, the L2, the scratch L1 (linked at
// L2 entry 510) and pool B is random.
#include "hostile.h"

namespace hostile {

namespace {

long uvm(uint64_t va, uint64_t val)
{
    return hypercall(__HYPERVISOR_update_va_mapping, va, val, UVMF_INVLPG | UVMF_LOCAL);
}

long mmu1(uint64_t ptr, uint64_t val)
{
    mmu_update_t u{ptr, val};
    return hypercall(__HYPERVISOR_mmu_update, uint64_t(&u), 1, 0, DOMID_SELF);
}

void must(const char* what, long rc)
{
    if (rc != 0) {
        say("hostile: setup: %s: %ld", what, rc);
        say("Test result: ERROR");
        sched_shutdown_t s{SHUTDOWN_crash};
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
    }
}

uint64_t* words(uint64_t gpfn) { return reinterpret_cast<uint64_t*>(g.va(gpfn)); }

constexpr uint64_t kTableLink = pte::P | pte::RW | pte::US | pte::A;
constexpr uint64_t kReadOnly = pte::P | pte::US | pte::A;

} // namespace

// Two pages of the image for SYSCALLs of the guest's own across a page
// boundary and before a hole (instructions.cc), and the hole: the third page,
// unmapped. In the image, so no hypercall's pointer reaches the bytes while
// they run (pool A's would).
alignas(4096) uint8_t g_code_b[3 * kPage];

uint64_t sealed_gpfn() { return (uint64_t(hostile_sealed_page) - g.physmap) / kPage; }

uint64_t pool_a(unsigned i)
{
    const uint64_t gp = g.region_a + i;
    return gp >= g.hole_b ? gp + 1 : gp;
}

void setup(const start_info_t* si, uint64_t initial_sp)
{
    g.si = si;
    g.physmap = si->pt_base;
    g.nr_pages = si->nr_pages;
    g.nr_pt = si->nr_pt_frames;
    g.first_mfn = reinterpret_cast<const uint64_t*>(si->mfn_list)[0];
    g.first_free = (initial_sp - g.physmap + kPage - 1) / kPage;
    g.shared = reinterpret_cast<shared_info_t*>(g.va((si->shared_info >> 12) - g.first_mfn));
    g.ring = reinterpret_cast<xencons_interface*>(g.va(si->console.domU.mfn - g.first_mfn));
    const uint64_t f = g.nr_pages;
    g.text = f - 1, g.hole_a = f - 2, g.region_a = f - 18, g.hole_b = f - 10;
    g.pool_b = f - 34;
    g.l3 = f - 35, g.l2 = f - 36, g.code_l1 = f - 37, g.scratch_l1 = f - 38;
    g.code[0] = f - 39, g.code[1] = f - 40;
    g.ldt = f - 41;
    if (f < 64 || g.ldt < g.first_free) must("the domain is too small (frames=)", -XEN_ENOMEM);
    must("pvmmu_op facts", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&g.facts)));

    // The text console_io prints: lines of 64 bytes.
    char* t = reinterpret_cast<char*>(g.va(g.text));
    static const char kText[] = "hostile: console_io text ";
    for (unsigned i = 0; i < kPage; ++i) {
        const unsigned c = i % 64;
        t[i] = c == 63 ? '\n' : c < sizeof(kText) - 1 ? kText[c] : '.';
    }
    // Code pages: int3 everywhere but a SYSCALL in the last two bytes of
    // each, and a RET as the first byte of the second (where the first
    // one's SYSCALL comes back).
    for (unsigned p = 0; p < 2; ++p) {
        auto* c = reinterpret_cast<uint8_t*>(g.va(g.code[p]));
        for (unsigned i = 0; i < kPage; ++i) c[i] = 0xcc;
        c[kPage - 2] = 0x0f, c[kPage - 1] = 0x05;
    }
    reinterpret_cast<uint8_t*>(g.va(g.code[1]))[0] = 0xc3;

    // The playground's tables, written while they are still data, then
    // read-only in the physmap, then linked at L4 slot 255 (which validates
    // them all).
    const uint64_t tables[] = {g.l3, g.l2, g.code_l1, g.scratch_l1};
    for (uint64_t gp : tables)
        for (unsigned i = 0; i < 512; ++i) words(gp)[i] = 0;
    words(g.code_l1)[510] = g.maddr(g.code[0]) | kReadOnly;
    words(g.code_l1)[511] = g.maddr(g.code[1]) | kReadOnly;
    words(g.l2)[511] = g.maddr(g.code_l1) | kTableLink;
    words(g.l2)[510] = g.maddr(g.scratch_l1) | kTableLink;
    words(g.l3)[511] = g.maddr(g.l2) | kTableLink;
    for (uint64_t gp : tables)
        must("a playground table read-only", uvm(g.va(gp), g.maddr(gp) | kReadOnly));
    must("L4 slot 255", mmu1(g.maddr(0) + 255 * 8, g.maddr(g.l3) | kTableLink));
    for (unsigned i = 0; i < kPoolB; ++i) {
        for (unsigned k = 0; k < 512; ++k) words(g.pool_b + i)[k] = 0;
        must("pool B read-only", uvm(g.va(g.pool_b + i), g.maddr(g.pool_b + i) | kReadOnly));
    }
    // The LDT page ("Segment Descriptors", SDM Vol. 3A): data read/write
    // and 64-bit code, DPL 3, flat, the accessed bit clear.
    constexpr uint64_t kData3 = 0x00cff2000000ffffull, kCode3 = 0x00affa000000ffffull, kPresent = 1ull << 47;
    for (unsigned k = 0; k < 512; ++k) words(g.ldt)[k] = 0;
    words(g.ldt)[1] = kData3;
    words(g.ldt)[2] = kData3 & ~kPresent;
    words(g.ldt)[3] = kCode3;
    must("the LDT page read-only", uvm(g.va(g.ldt), g.maddr(g.ldt) | kReadOnly));
    must("hole A", uvm(g.va(g.hole_a), 0));
    must("hole B", uvm(g.va(g.hole_b), 0));
    must("hole C", uvm(uint64_t(g_code_b) + 2 * kPage, 0));
    // The sealed page: its reference hash, then read-only (sealed.S).
    hostile_sealed_ref = hostile_sealed_hash();
    must("the sealed page read-only",
         uvm(uint64_t(hostile_sealed_page), g.maddr(sealed_gpfn()) | kReadOnly));
    const auto* code = reinterpret_cast<const uint8_t*>(kLowerEnd - 2);
    if (code[0] != 0x0f || code[1] != 0x05) must("the code page at the canonical boundary", -XEN_EINVAL);
    user_setup();
    install_traps();
    user_no_callback_check();
    say("hostile: domain of %lu frames from mfn 0x%lx; pool A at 0x%lx, pool B at 0x%lx, playground L3 mfn 0x%lx, code at 0x%lx",
        g.nr_pages, g.first_mfn, g.va(g.region_a), g.va(g.pool_b), g.mfn(g.l3), kCodeVa);
}

namespace {
// A copy of what protected_hash() covers, to say which entry changed.
constexpr unsigned kMaxPt = 24;
uint64_t g_snapshot[kMaxPt + 1][512];
} // namespace

void protected_snapshot()
{
    for (uint64_t gp = 0; gp < g.nr_pt && gp < kMaxPt; ++gp)
        for (unsigned i = 0; i < 512; ++i) g_snapshot[gp][i] = words(gp)[i];
    for (unsigned i = 0; i < 512; ++i) g_snapshot[kMaxPt][i] = words(g.code_l1)[i];
}

void protected_diff()
{
    unsigned shown = 0;
    auto cmp = [&](const char* what, uint64_t gp, unsigned i, uint64_t was) {
        const uint64_t now = words(gp)[i];
        if (((now ^ was) & ~(pte::A | pte::D)) && shown++ < 8)
            say("hostile:   %s gpfn 0x%lx (mfn 0x%lx) entry %lu: was 0x%lx, now 0x%lx", what, gp, g.mfn(gp), uint64_t(i), was, now);
    };
    for (uint64_t gp = 0; gp < g.nr_pt && gp < kMaxPt; ++gp)
        for (unsigned i = 0; i < 512; ++i) cmp("live table", gp, i, g_snapshot[gp][i]);
    for (unsigned i = 0; i < 512; ++i) cmp("code L1", g.code_l1, i, g_snapshot[kMaxPt][i]);
    cmp("playground L3", g.l3, 511, g.maddr(g.l2) | pte::P | pte::RW | pte::US | pte::A);
    cmp("playground L2", g.l2, 511, g.maddr(g.code_l1) | pte::P | pte::RW | pte::US | pte::A);
}

// FNV-1a over the live tables and the playground's three fixed entries, A
// and D left out (the hardware sets them).
uint64_t protected_hash()
{
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&](uint64_t e) {
        e &= ~(pte::A | pte::D);
        for (int i = 0; i < 8; ++i) h = (h ^ ((e >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    };
    for (uint64_t gp = 0; gp < g.nr_pt; ++gp)
        for (unsigned i = 0; i < 512; ++i) mix(words(gp)[i]);
    mix(words(g.l3)[511]);
    mix(words(g.l2)[511]);
    for (unsigned i = 0; i < 512; ++i) mix(words(g.code_l1)[i]);
    return h;
}

// The guest's own image: text, read-only data and notes, from the hypercall
// page (first in .text) to the start of .data (guest/platform/xenpv/xenpv.ld),
// each page hashed on its own, and the layout and options as one more part.
// Nothing may change them after setup: every pointer the guest hands the
// hypervisor leads into pool A or to memory it must refuse (args.cc), so a
// change is a write through a pointer drawn wrong, or a hypervisor's stray one.
namespace {
constexpr unsigned kMaxImageParts = 128;
uint64_t g_image_ref[kMaxImageParts + 1];

uint64_t image_begin() { return uint64_t(hypercall_page); }
uint64_t image_pages() { return (uint64_t(__init_array_start) - image_begin()) / kPage; }

// FNV-1a's multiply over 64-bit words: any one word changed changes it.
uint64_t words_hash(const void* p, uint64_t bytes)
{
    const auto* w = static_cast<const volatile uint64_t*>(p);
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < bytes / 8; ++i) h = (h ^ w[i]) * 0x100000001b3ull;
    return h;
}

uint64_t image_part_hash(unsigned part)
{
    if (part == kMaxImageParts) return words_hash(&g, sizeof g) ^ words_hash(&opt, sizeof opt);
    return words_hash(reinterpret_cast<const void*>(image_begin() + part * kPage), kPage);
}
} // namespace

void own_image_snapshot()
{
    if (image_pages() > kMaxImageParts) must("the image is too large to hash (pages=)", -XEN_E2BIG);
    for (unsigned p = 0; p < image_pages(); ++p) g_image_ref[p] = image_part_hash(p);
    g_image_ref[kMaxImageParts] = image_part_hash(kMaxImageParts);
}

bool own_image_changed()
{
    for (unsigned p = 0; p < image_pages(); ++p)
        if (image_part_hash(p) != g_image_ref[p]) return true;
    return image_part_hash(kMaxImageParts) != g_image_ref[kMaxImageParts];
}

void own_image_diff()
{
    unsigned shown = 0;
    for (unsigned p = 0; p < image_pages(); ++p)
        if (image_part_hash(p) != g_image_ref[p] && shown++ < 8)
            say("hostile:   image page at 0x%lx (text and read-only data from 0x%lx to 0x%lx) changed",
                image_begin() + p * kPage, image_begin(), uint64_t(__init_array_start));
    if (image_part_hash(kMaxImageParts) != g_image_ref[kMaxImageParts])
        say("hostile:   the layout (g at 0x%lx) or the options (opt at 0x%lx) changed", uint64_t(&g), uint64_t(&opt));
}

void op_write_pool_b()
{
    const uint64_t gp = g.pool_b + rng.below(kPoolB);
    note("write pool B", gp, g.mfn(gp));
    // Writable only while no page table: otherwise -EINVAL, and it stays as it is.
    const long rc = uvm(g.va(gp), g.maddr(gp) | pte::P | pte::RW | pte::US | pte::A);
    noted_result(rc);
    if (rc != 0) return;
    uint64_t* w = words(gp);
    const unsigned level = 1 + unsigned(rng.below(4));
    switch (rng.below(4)) {
    case 0:
        for (unsigned i = 0; i < 512; ++i) w[i] = 0;
        break;
    case 1:   // a few entries, or a whole table of them (one that validates, mostly)
        if (rng.below(2))
            for (unsigned i = 0; i < 512; ++i) w[i] = rng.one_in(4) ? pick_pte(level) : 0;
        else
            for (unsigned n = 1 + unsigned(rng.below(8)); n; --n) w[rng.below(512)] = pick_pte(level);
        break;
    case 2:   // a run, as a guest builds a table
        for (unsigned i = unsigned(rng.below(512)), n = unsigned(rng.below(64)); n && i < 512; --n, ++i)
            w[i] = pick_pte(level);
        break;
    default:   // entries taken out
        for (unsigned n = 1 + unsigned(rng.below(8)); n; --n) w[rng.below(512)] = 0;
    }
    const long back = uvm(g.va(gp), g.maddr(gp) | kReadOnly);
    if (back != 0) fail("pool B frame 0x%lx not read-only again: %ld", gp, back);
}

} // namespace hostile
