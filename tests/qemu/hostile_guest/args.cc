// Random arguments for the hostile guest's hypercalls and instructions
// (docs/security.md §7.10), each drawn so that whatever the hypervisor does
// with it cannot hurt the guest itself:
//  - pointers lead into pool A (the only memory a hypercall may write), or
//    to addresses the hypervisor must refuse or may only read (the live
//    tables and the code pages, read-only; what they hold read as requests
//    names no frame a request could change, setup.cc); and one it writes
//    through never into the operation's own arrays that it reads later, a
//    multicall's next entries (in_op_arrays; hypercalls.cc keep_arrays_intact);
//  - page-table entries name pool A and B, the scratch L1, the guest's data
//    and frames that are not its own, at any level; never a live table or
//    a playground table, so no table built from them, at whatever level it
//    is later pinned, reaches the guest's own tables;
//  - the entries a request changes are the playground's and pool B's.
#include "hostile.h"

namespace hostile {

namespace {

constexpr uint64_t kHvBase = 0xffff800000000000ull;   // L4 slot 256
constexpr uint64_t kSlot = 1ull << 39;

struct Seg {
    uint64_t first, pages;   // a run of mapped pool A pages
};
Seg segment(unsigned s)
{
    return s == 0 ? Seg{g.region_a, g.hole_b - g.region_a} : Seg{g.hole_b + 1, g.hole_a - g.hole_b - 1};
}

uint64_t g_lo, g_cur, g_end;   // this operation's arrays lie in [g_lo, g_cur)

// A frame of the guest that is neither a table nor one of its pools: its
// image, stack, boot structures, the text and code pages — each mapped
// writable in the physmap, so none can become a table. Not hole C, the
// image's one page without a mapping: as an empty L4 it validated, and a
// NEW_BASEPTR to it took the guest's address space away (seed 2027, after
// some 6 million operations: a #PF at the instruction after the mmuext_op,
// its bounce frame unwritable). Not the sealed page either, read-only in the
// physmap (sealed.S): pinned as a table, its words would be entries.
uint64_t own_data_gpfn()
{
    switch (rng.below(4)) {
    case 0: return g.text;
    case 1: return g.code[rng.below(2)];
    default: {
        const uint64_t hole_c = (uint64_t(g_code_b) + 2 * kPage - g.physmap) / kPage;
        const uint64_t gp = g.nr_pt + rng.below(g.code[1] - g.nr_pt);
        return gp == hole_c || gp == sealed_gpfn() ? g.text : gp;
    }
    }
}

uint64_t foreign_mfn()
{
    switch (rng.below(6)) {
    case 0:
        if (g.facts.peer_domid != DOMID_INVALID && g.facts.peer_nr_frames)
            return g.facts.peer_first_mfn + rng.below(g.facts.peer_nr_frames);
        return g.facts.hypervisor_mfn;
    case 1: return g.facts.hypervisor_mfn;
    case 2: return g.facts.io_mfn;
    case 3: return (1ull << 36) + rng.below(1ull << 20);   // beyond machine memory
    case 4: return rng.of({0ull, 1ull, 0xfffffffffull, (1ull << 40) - 1});
    default: {
        uint64_t m = rng.below(1ull << 17);   // the first 512 MiB: the hypervisor's, other domains', free
        return g.own(m) ? g.facts.hypervisor_mfn : m;
    }
    }
}

} // namespace

void alloc_reset()
{
    const Seg s = segment(unsigned(rng.below(2)));
    g_cur = g.va(s.first) + rng.below(s.pages / 2 + 1) * kPage + rng.below(kPage / 8) * 8 / 2;
    g_end = g.va(s.first + s.pages);
    g_lo = g_cur;
}

uint64_t op_arrays_end() { return g_end; }

bool in_op_arrays(uint64_t va, uint64_t bytes)
{
    return va < g_end && va + bytes > g_lo && va + bytes > va;
}

uint64_t alloc_a(uint64_t bytes)
{
    const uint64_t p = (g_cur + 7) & ~7ull;
    if (p + bytes > g_end) return 0;
    g_cur = p + bytes;
    return p;
}

// A count for an array of n elements at `list`: mostly exact, else zero, a
// few more, huge, or with the continuation bit; beyond n the memory after
// the array is zeroed first (zero_after), so nothing older is read as requests.
uint64_t pick_count(uint64_t n, uint64_t list, uint64_t elem)
{
    const uint64_t r = rng.below(20);
    if (r < 13) return n;
    if (r == 13) return 0;
    if (list) zero_after(list + n * elem);
    switch (r) {
    case 14: return n + 1 + rng.below(4);
    case 15: return 0x7fffffff;
    case 16: return 0xffffffff;
    case 17: return n | PVMMU_MMU_UPDATE_PREEMPTED;
    case 18: return (1ull << 32) | n;
    default: return rng.next();
    }
}

// A list the guest writes now, or (1 in 8) a pointer the hypervisor must
// refuse or may only read — never old bytes of pool A (found by seed 2027:
// a list drawn there, once in millions of calls, replaced the guest's
// address space).
uint64_t list_or_bad(uint64_t bytes, uint64_t& list)
{
    list = rng.one_in(8) ? 0 : alloc_a(bytes);
    return list ? list : pick_refused_pointer(bytes);
}

namespace {

// An offset into a run of `span` bytes, moved back so that `bytes` from it
// stay inside (a run shorter than `bytes` from its start): the pointers into
// the live tables take the same draws, so every operation draws what it did
// and a seed replays the same up to the first pointer moved (what that call
// then does differently may steer later ones: a pool B frame that is a table
// or not, vCPU 1's state, the trap table). Both kinds of pointer need it: what
// follows the last live table is the guest's own writable memory, so a
// multicall's first entry at offset 0xff8 has its result written back there,
// and the multicall goes on through the physmap, an entry at a time, across
// the guest's own text (seed 20261207, operation 29246218).
uint64_t within(uint64_t off, uint64_t span, uint64_t bytes)
{
    if (bytes > span) bytes = span;
    return off + bytes > span ? (span - bytes) & ~7ull : off;
}

// A pointer into the live tables (read-only in the physmap), with `bytes`
// after it that are still theirs. The word in the table is drawn first, the
// table second: the order every recorded seed ran with.
uint64_t live_table_pointer(uint64_t bytes)
{
    const uint64_t word = rng.below(kPage / 8);
    const uint64_t table = rng.below(g.nr_pt);
    return g.physmap + within(table * kPage + word * 8, g.nr_pt * kPage, bytes);
}

} // namespace

void zero_after(uint64_t va)
{
    for (unsigned s = 0; s < 2; ++s) {
        const Seg x = segment(s);
        const uint64_t lo = g.va(x.first), hi = g.va(x.first + x.pages);
        if (va < lo || va >= hi) continue;
        for (uint64_t* p = reinterpret_cast<uint64_t*>(va & ~7ull); uint64_t(p) < hi; ++p) *p = 0;
    }
}

uint64_t pick_bad_va()
{
    switch (rng.below(9)) {
    case 0: return rng.of({0ull, 8ull, 0x1000ull, 0xfffull});
    case 1: return 0x100000000000ull + rng.below(1ull << 40);        // an empty L4 slot
    case 2: return rng.of({g.va(g.hole_a), g.va(g.hole_b), g.va(g.nr_pages)}) + rng.below(kPage);
    case 3: return kHvBase + rng.below(16) * kSlot + rng.below(kSlot);   // the hypervisor's slots
    case 4: return rng.of({0xffff808000000000ull, 0xffff828000100000ull, 0xffff830000000000ull,
                          0xffff878000000000ull, 0xffff87fffffffff8ull}) + rng.below(64);
    case 5: return kLowerEnd + rng.below(1ull << 46);                 // non-canonical
    case 6: return rng.of({kLowerEnd, 0xffff7ffffffffff8ull, 0x8000000000000000ull, 0x7fffffffffffffffull}) +
                   rng.below(16);
    case 7: return 0xffff880000000000ull + rng.below(1ull << 45);     // the upper guest half, empty
    default: return ~0ull - rng.below(64);                            // wraps past 2^64
    }
}

uint64_t pick_pointer(uint64_t room)
{
    const uint64_t r = rng.below(100);
    if (r < 55) {
        const Seg s = segment(unsigned(rng.below(2)));
        const uint64_t end = g.va(s.first + s.pages);
        const uint64_t span = s.pages * kPage;
        uint64_t off = rng.below(span);
        if (!rng.one_in(8)) off &= ~7ull;
        if (room > span) room = span;
        if (off + room > span) off = span - room;
        return end - span + off;
    }
    if (r < 63) {   // across the end of pool A's run into a hole
        const Seg s = segment(unsigned(rng.below(2)));
        return g.va(s.first + s.pages) - 1 - rng.below(room < 64 ? room + 1 : 64);
    }
    if (r < 70) {   // readable, not writable, all `room` bytes (the code pages end at the canonical boundary)
        switch (rng.below(3)) {
        case 0: return live_table_pointer(room);
        case 1: return kCodeVa + rng.below(2 * kPage);
        default: return kLowerEnd - 1 - rng.below(16);   // across the canonical boundary
        }
    }
    if (r < 97) return pick_bad_va();
    uint64_t v = rng.next();
    if ((v >= g.physmap && v < g.physmap + g.nr_pages * kPage) || (v >= kSlot255 && v < kLowerEnd)) v |= 1ull << 62;
    return v;
}

uint64_t pick_refused_pointer(uint64_t bytes)
{
    if (rng.below(3)) return pick_bad_va();
    switch (rng.below(3)) {
    case 0: return live_table_pointer(bytes);
    case 1: return kCodeVa + rng.below(2 * kPage);
    default: return kLowerEnd - 1 - rng.below(16);
    }
}

uint64_t pick_mfn(Use u)
{
    const bool table_ok = u != Use::Baseptr;   // pool B and the scratch L1 may be L4s
    const bool live_ok = u == Use::Pin || u == Use::Unpin || u == Use::UserBaseptr || u == Use::Gdt;
    for (;;) {
        switch (rng.below(14)) {
        case 0: case 1: case 2: case 3:
            if (table_ok) return g.mfn(g.pool_b + rng.below(kPoolB));
            break;
        case 4:
            if (table_ok) return g.mfn(g.scratch_l1);
            break;
        case 5: case 6: return g.mfn(pool_a(unsigned(rng.below(kRegionA - 1))));
        case 7: {
            // Not for a GDT: set_gdt takes a writable frame and writes back
            // every present descriptor whose DPL it raises (docs/abi.md §10
            // "GDT"), which in the guest's image is its own code (seed
            // 20261207, op 11210185, seen by the image check: set_gdt of the
            // frame of setup()'s code). The console text reads as descriptors
            // that are not present: taken as they are, never written.
            const uint64_t gp = own_data_gpfn();
            return g.mfn(u == Use::Gdt ? g.text : gp);
        }
        case 8:
            if (u == Use::Baseptr) return g.mfn(0);   // its own L4: a reload
            if (live_ok) {
                const uint64_t gp = rng.below(g.nr_pt);
                if (u != Use::Unpin || gp != 0) return g.mfn(gp);   // the L4's pin stays
            }
            break;
        case 9:
            if (live_ok) return g.mfn(rng.of({g.l3, g.l2, g.code_l1}));
            break;
        default: return foreign_mfn();
        }
    }
}

uint64_t pick_descriptor_maddr()
{
    uint64_t mfn;
    switch (rng.below(8)) {
    case 0: case 1: case 2: mfn = g.mfn(pool_a(unsigned(rng.below(kRegionA - 1)))); break;
    case 3: mfn = g.mfn(g.pool_b + rng.below(kPoolB)); break;
    case 4: mfn = g.mfn(rng.below(g.nr_pt)); break;   // a live table: refused, or the hash check says so
    case 5: mfn = g.mfn(rng.of({g.l3, g.l2, g.code_l1})); break;
    case 6: mfn = foreign_mfn(); break;
    default: return rng.next();
    }
    return (mfn << 12) | (rng.one_in(8) ? rng.below(kPage) : rng.below(kPage / 8) * 8);
}

// An entry the hypervisor is likely to accept, so that tables validate, pins
// and links succeed and the entries after them are reached: a pool A page (a
// data frame) at level 1, a pool B frame or the scratch L1 above.
uint64_t plausible_pte(unsigned level)
{
    if (rng.one_in(10)) return 0;
    uint64_t f = pte::P | pte::US | pte::A;
    if (level == 1) {
        if (rng.below(2)) f |= pte::RW;
        if (rng.below(2)) f |= pte::NX;
        if (rng.one_in(3)) f |= pte::D;
        return g.maddr(pool_a(unsigned(rng.below(kRegionA - 1)))) | f;
    }
    const uint64_t gp = rng.one_in(4) ? g.scratch_l1 : g.pool_b + rng.below(kPoolB);
    return g.maddr(gp) | f | pte::RW;
}

uint64_t pick_pte(unsigned level)
{
    if (rng.below(2)) return plausible_pte(level);
    uint64_t f = pte::P;
    if (rng.one_in(12)) f = 0;
    if (rng.below(2)) f |= pte::RW;
    if (!rng.one_in(4)) f |= pte::US;
    if (rng.below(2)) f |= pte::A;
    if (rng.one_in(3)) f |= pte::D;
    if (rng.one_in(4)) f |= pte::NX;
    if (rng.one_in(6)) f |= rng.below(8) << 9;            // available 11:9
    if (rng.one_in(10)) f |= rng.below(128) << 52;        // available 58:52
    if (rng.one_in(12)) f |= rng.of({pte::PWT, pte::PCD, pte::PS, pte::G, 1ull << 59, pte::PK});   // refused
    (void)level;   // the same frames at every level: see the top of this file
    uint64_t m = pick_mfn(Use::PteVal);
    if (rng.one_in(40)) m = rng.next() >> 24;   // any frame field, reserved bits included
    return ((m << 12) & pte::ADDR) | f | (rng.one_in(40) ? rng.next() & (0xfull << 48) : 0);
}

uint64_t pick_entry(unsigned& level)
{
    const uint64_t index = rng.below(512) * 8;
    level = 1 + unsigned(rng.below(4));
    switch (rng.below(12)) {
    case 0: case 1: case 2: level = 1; return g.maddr(g.scratch_l1) + index;
    case 3: case 4: case 5: case 6: return g.maddr(g.pool_b + rng.below(kPoolB)) + index;
    case 7: level = 2; return g.maddr(g.l2) + rng.below(511) * 8;   // never 511, the code L1's link
    case 8: level = 3; return g.maddr(g.l3) + rng.below(511) * 8;   // never 511, the L2's link
    case 9: return g.maddr(rng.below(2) ? pool_a(unsigned(rng.below(kRegionA - 1))) : own_data_gpfn()) + index;
    default: return (foreign_mfn() << 12) + index;
    }
}

uint64_t pick_flag_range()
{
    const uint64_t mask = rng.next() & PVMMU_FR_PTE_FLAG_BITS & (rng.one_in(3) ? ~0ull : (pte::RW | pte::NX | pte::A | pte::D));
    const uint64_t bits = rng.next() & mask;
    const uint32_t count = uint32_t(rng.of({0ull, 1ull, 2ull, 16ull, 511ull, 512ull, 513ull, 1023ull}) +
                                    (rng.one_in(2) ? rng.below(64) : 0));
    uint64_t v = pvmmu::abi::encode_flag_range(mask, bits, count);
    if (rng.one_in(16)) v |= 1ull << (58 + rng.below(6));   // must-be-zero bits
    return v;
}

uint64_t pick_uvm_va()
{
    // Never an address the live L1s cover (the physmap, its holes included):
    // update_va_mapping would change a live table.
    const uint64_t live_end = g.physmap + ((g.nr_pages + 511) / 512) * 512 * kPage;
    if (!rng.below(4)) {
        const uint64_t va = pick_bad_va();
        if (va < g.physmap || va >= live_end) return va;
    }
    {
        uint64_t va = kSlot255 + rng.below((kCodeRegion - kSlot255) / kPage) * kPage;
        if (rng.below(2)) va = kCodeRegion - kPage * (1 + rng.below(1024));   // near the scratch L1's range
        return va + (rng.one_in(8) ? rng.below(kPage) : 0);
    }
}

uint64_t pick_any_va()
{
    switch (rng.below(4)) {
    case 0: return pick_uvm_va();
    case 1: return g.physmap + rng.below(g.nr_pages) * kPage;
    case 2: return kCodeVa + rng.below(2 * kPage);
    default: return pick_bad_va();
    }
}

} // namespace hostile
