// recursive-pagetable: linear (recursive) page-table tricks, the class of Xen
// advisories XSA-182 (a self-referencing L4 entry whose RW bit a fast path let
// through: a writable view of the guest's own page tables) and XSA-240 (linear
// page tables at every level, unbounded recursion when they are torn down).
// pvmmu has no linear page tables (abi.md §4.6): an entry may name only a table
// of the next level down, so
//   - an L4 entry naming its own L4, an L3 entry naming its L3 or the L4 above
//     it, an L2 entry naming itself, its L3 or the L4: -EINVAL, live or built
//     into a fresh table that is then pinned or made the base pointer;
//   - an L1 entry mapping a page table (itself, the L2, L3, L4) writable:
//     -EINVAL by cmd 0, cmd 2, update_va_mapping and a cmd-4 RW raise;
//   - read-only it is allowed, and a store through it faults.
// Every refused request leaves the entry as it was; the VA the trick would have
// opened stays unmapped; the frames used for the built tables become ordinary
// writable pages again (no type reference left behind).
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "recursive page tables (L4 to itself, L3/L2 back up, writable self-maps) are refused";
const TestConfig test_config = {.cpus = 1};

namespace {

constexpr unsigned kFreeL4Slot = 3;   // physmap is slot 1, the address space slot 2
AddressSpace as;
LivePage live;   // a written page of the address space, and its L2 and L1
Gpfn l2, l1;

Va probe() { return live.va; }
// A free entry in each of the address space's tables (nothing mapped there).
unsigned free_l3_slot() { return table_index(probe(), Level::L3) + 1; }
unsigned free_l2_slot() { return table_index(probe(), Level::L2) + 1; }
unsigned free_l1_slot() { return table_index(probe(), Level::L1) + 1; }
// The address probe() would have with index i at level l (and zeros below).
Va at_index(Level l, unsigned i)
{
    const uint64_t span = level_span(l);
    return Va{(probe().v & ~(span * kEntriesPerTable - 1)) + i * span};
}

Mfn mfn(Cpu& c, Gpfn g) { return c.guest->mfn(g); }

// Entry `slot` of the live upper-level `table` pointed at each of `targets`
// with cmd 0 and cmd 2, read-only and writable: all -EINVAL.
void link_up(Cpu& c, const char* what, Gpfn table, unsigned slot, std::initializer_list<Gpfn> targets)
{
    const PteRef r{table, slot};
    for (Gpfn t : targets)
        for (uint64_t flags : {pte::kTableLink, pte::kTableLink & ~pte::RW})
            for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE})
                attack_entry(c, r, Req{ptr_of(c, r, cmd), make_pte(mfn(c, t), flags)}, -XEN_EINVAL, what);
}

void live_links(Cpu& c)
{
    const Gpfn l4 = c.guest->l4(), l3 = as.root();
    link_up(c, "L4 entry naming its own L4", l4, kFreeL4Slot, {l4});
    link_up(c, "L3 entry naming itself or the L4", l3, free_l3_slot(), {l3, l4});
    link_up(c, "L2 entry naming itself, its L3 or the L4", l2, free_l2_slot(), {l2, l3, l4});
    // The address the L4 trick would have opened is not mapped.
    uint64_t v;
    CHECK(!c.mem.load(Va{uint64_t(kFreeL4Slot) << 39}, v));
    CHECK(!c.mem.store(Va{(uint64_t(kFreeL4Slot) << 39) + (uint64_t(kFreeL4Slot) << 30)}, 0));
}

// An L1 entry mapping a table writable, by every path that writes an L1 entry.
void writable_self_maps(Cpu& c)
{
    const unsigned i = free_l1_slot();
    const PteRef r{l1, i};
    const Va va = at_index(Level::L1, i);
    for (Gpfn t : {l1, l2, as.root(), c.guest->l4()}) {
        const uint64_t rw = make_pte(mfn(c, t), pte::P | pte::RW | pte::US);
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE})
            attack_entry(c, r, Req{ptr_of(c, r, cmd), rw}, -XEN_EINVAL, "L1 entry mapping a table writable");
        uint64_t before = ~0ull;
        CHECK(pte_read(c, r, before));
        expect_untouched(c, r, before, hypercall(c, __HYPERVISOR_update_va_mapping, va.v, rw, UVMF_INVLPG | UVMF_LOCAL),
                         -XEN_EINVAL, "update_va_mapping of a table, writable");

        // Read-only is allowed; a store through it faults; raising RW is refused.
        const Req ro{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), rw & ~pte::RW};
        uint32_t done;
        CHECK_EQ(raw_mmu_update(c, &ro, 1, done), 0);
        uint64_t first = 0, seen = ~0ull;
        CHECK(pte_read(c, PteRef{t, 0}, first));
        CHECK(c.mem.load(va, seen));
        CHECK_EQ(seen, first);
        CHECK(!c.mem.store(va, make_pte(mfn(c, Gpfn{0}), pte::P | pte::RW | pte::US)));
        uint64_t after = ~0ull;
        CHECK(pte_read(c, PteRef{t, 0}, after));
        CHECK_EQ(after, first);
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE})
            attack_entry(c, r, Req{ptr_of(c, r, cmd), rw}, -XEN_EINVAL, "RW raise on a read-only self-map");
        if (rt::offers(needs::kFlagRange, "the cmd-4 RW raise on a read-only self-map"))
            attack_entry(c, r, Req{ptr_of(c, r, MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::RW, pte::RW, 1)},
                         -XEN_EINVAL, "cmd-4 RW raise on a read-only self-map");
        const Req gone{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), 0};
        CHECK_EQ(raw_mmu_update(c, &gone, 1, done), 0);
        CHECK_EQ(mmuext_one(c, MMUEXT_INVLPG_LOCAL, va.v), 0);
        CHECK(!c.mem.load(va, seen));
    }
}

// Writes `e` at entry i of frame g (an ordinary writable page), then makes g
// read-only so that it may become a table.
void prepare(Cpu& c, Gpfn g, unsigned i, uint64_t e)
{
    CHECK(zero_frame(c, g));
    CHECK(c.mem.store(c.guest->va(g) + i * 8, e));
    CHECK_EQ(physmap_set_writable(c, g, false), 0);
}

// After refused pins, f holds no type: it becomes an ordinary writable page.
void released(Cpu& c, Gpfn f, const char* what)
{
    if (physmap_set_writable(c, f, true) != 0 || !can_write(c, c.guest->va(f), 0))
        rt::fail("%s: the frame kept a page-table type after the refusal", what);
}

// The same tricks built into fresh tables before they are pinned.
void built_tables(Cpu& c)
{
    Gpfn f, g;
    if (!c.guest->frames().alloc(c, 1, f) || !c.guest->frames().alloc(c, 1, g)) return rt::error("no frames");

    // An L4 whose slot 5 names itself: not an L4, nor an L3 or L2 (it names a
    // frame of its own level), nor an L1 (it maps itself writable).
    prepare(c, f, 5, make_pte(mfn(c, f), pte::kTableLink));
    for (unsigned l = 1; l <= 4; ++l) CHECK_EQ(pt_pin(c, f, Level(l)), -XEN_EINVAL);
    CHECK_EQ(switch_base(c, f), -XEN_EINVAL);
    released(c, f, "self-linked L4");

    // A loop one level apart: f (an L3) links g, g (an L2) links f back.
    prepare(c, f, 7, make_pte(mfn(c, g), pte::kTableLink));
    prepare(c, g, 9, make_pte(mfn(c, f), pte::kTableLink));
    CHECK_EQ(pt_pin(c, f, Level::L3), -XEN_EINVAL);
    CHECK_EQ(pt_pin(c, g, Level::L2), -XEN_EINVAL);
    released(c, f, "L3/L2 loop (L3)");
    released(c, g, "L3/L2 loop (L2)");

    // An L1 mapping itself read-only is an L1; linked, its own page reads as
    // the table and does not take a store.
    prepare(c, f, 5, make_pte(mfn(c, f), pte::P | pte::US));
    CHECK_EQ(pt_pin(c, f, Level::L1), 0);
    const unsigned s = free_l2_slot();
    CHECK_EQ(pt_link(c, l2, s, f), 0);
    const Va self = at_index(Level::L2, s) + 5 * kPageSize;   // entry 5 of f maps f
    uint64_t seen = 0;
    CHECK(c.mem.load(self + 5 * 8, seen));
    CHECK_EQ(seen & ~pte::AD, make_pte(mfn(c, f), pte::P | pte::US));
    CHECK(!c.mem.store(self + 5 * 8, make_pte(mfn(c, f), pte::P | pte::RW | pte::US)));
    CHECK_EQ(load_or(c, c.guest->va(f) + 5 * 8) & ~pte::AD, make_pte(mfn(c, f), pte::P | pte::US));
    CHECK_EQ(pt_unlink(c, l2, s), 0);
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_LOCAL, 0), 0);
    CHECK_EQ(pt_unpin(c, f), 0);
    released(c, f, "read-only self-mapping L1");
    c.guest->frames().free(c, f);
    c.guest->frames().free(c, g);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!setup_space(as) || !map_live_page(c, as, as.base() + 12 * level_span(Level::L2), 1, live)) return;
    l2 = live.l2;
    l1 = live.l1;

    live_links(c);
    writable_self_maps(c);
    built_tables(c);
    CHECK_EQ(load_or(c, probe()), 1);   // the tree still works
}
