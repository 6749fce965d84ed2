// writable-pagetable-denied: no path gives the guest a writable mapping of any
// of its own page tables — the builder's (L4, L3, L2s, L1s), the tables of an
// address space the library built (L3, L2, L1), and a pinned stand-alone L1:
// cmd 0 / cmd 2 / cmd 4 raising RW on their physmap entries, update_va_mapping,
// a new writable mapping elsewhere, the same inside a multicall. The reverse is
// refused too: a frame mapped writable cannot become a table (pin, link,
// NEW_BASEPTR). Every refusal is -EINVAL (on Xen a refused writable mapping
// is -EBUSY: writable_table_map_errno), and no table or mapping changes.
#include "guest/pagetable.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "no path gives a writable mapping of the guest's own page tables";
const TestConfig test_config = {.cpus = 1};

namespace {

constexpr unsigned kMaxTables = 64;
AddressSpace as;
Gpfn tables[kMaxTables];
unsigned nr_tables = 0;
uint64_t contents[kMaxTables][kEntriesPerTable];

Va probe() { return as.base() + 12 * level_span(Level::L2); }   // an AS page, mapped
Va spare() { return probe() + kPageSize; }                       // its neighbour, never mapped

void collect(Cpu& c)
{
    const BootInfo& b = c.guest->boot();
    for (uint64_t g = b.first_pt; g < b.first_pt + b.nr_pt_frames; ++g) tables[nr_tables++] = Gpfn{g};
    PteRef r;
    CHECK(as.pte_of(c, probe(), r));
    Gpfn l2;
    CHECK(pt_child(c, as.root(), table_index(probe(), Level::L3), l2));
    tables[nr_tables++] = as.root();
    tables[nr_tables++] = l2;
    tables[nr_tables++] = r.table;
    Gpfn lone;
    CHECK_EQ(pt_alloc(c, lone), 0);
    CHECK_EQ(pt_pin(c, lone, Level::L1), 0);
    tables[nr_tables++] = lone;
    for (unsigned i = 0; i < nr_tables; ++i) CHECK(read_table(c, tables[i], contents[i]));
}

// One refused request; nothing of the physmap entry changes.
void refused(Cpu& c, long rc, PteRef pm, uint64_t before, const char* what, Gpfn t)
{
    uint64_t after = 0;
    CHECK(pte_read(c, pm, after));
    if (rc != writable_table_map_errno() || ((after ^ before) & ~pte::AD))
        rt::fail("%s of table gpfn %llu: rc %ld, entry %#llx -> %#llx", what, (unsigned long long)t.v, rc,
                 (unsigned long long)before, (unsigned long long)after);
}

void raise_in_physmap(Cpu& c, Gpfn t)
{
    const PteRef pm = c.guest->physmap_pte(t);
    uint64_t e = 0;
    CHECK(pte_read(c, pm, e));
    CHECK(pte_present(e) && !(e & pte::RW));
    uint32_t done;
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
        const Req r{ptr_of(c, pm, cmd), e | pte::RW};
        refused(c, raw_mmu_update(c, &r, 1, done), pm, e, cmd ? "cmd 2 raise" : "cmd 0 raise", t);
    }
    if (rt::offers(needs::kFlagRange, "the cmd-4 raise")) {
        const Req fr{ptr_of(c, pm, MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::RW, pte::RW, 1)};
        refused(c, raw_mmu_update(c, &fr, 1, done), pm, e, "cmd 4 raise", t);
    }
    refused(c, hypercall(c, __HYPERVISOR_update_va_mapping, c.guest->va(t).v, e | pte::RW, UVMF_INVLPG | UVMF_LOCAL),
            pm, e, "update_va_mapping raise", t);
    // And the direct way: a store through the read-only physmap mapping. A
    // store to an L1 in use that way is emulated as a checked update of the
    // entry, on Xen and on pvmmu (abi.md §12.5), so the value stored is one
    // no check accepts: the table mapped writable by its own entry 0.
    CHECK(!can_write(c, c.guest->va(t), make_pte(c.guest->mfn(t), pte::P | pte::RW | pte::US)));
}

// A second mapping of the table, at an unmapped page of the address space.
void map_elsewhere(Cpu& c, Gpfn t)
{
    PteRef r;
    CHECK(as.pte_of(c, spare(), r));
    uint64_t e = 0;
    CHECK(pte_read(c, r, e));
    CHECK(pte_none(e));
    uint32_t done;
    const uint64_t rw = make_pte(c.guest->mfn(t), pte::P | pte::RW | pte::US);
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
        const Req req{ptr_of(c, r, cmd), rw};
        refused(c, raw_mmu_update(c, &req, 1, done), r, e, "writable alias", t);
    }
    refused(c, hypercall(c, __HYPERVISOR_update_va_mapping, spare().v, rw, 0), r, e, "update_va_mapping alias", t);
    // Read-only is allowed (a linear page-table mapping), and goes again.
    const Req ro{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), rw & ~pte::RW};
    CHECK_EQ(raw_mmu_update(c, &ro, 1, done), 0);
    const Req gone{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), 0};
    CHECK_EQ(raw_mmu_update(c, &gone, 1, done), 0);
}

// The same raise inside a multicall: the entry's result is -EINVAL.
void in_multicall(Cpu& c, Gpfn t)
{
    const PteRef pm = c.guest->physmap_pte(t);
    uint64_t e = 0;
    CHECK(pte_read(c, pm, e));
    const Va list = c.scratch;   // one multicall_entry_t
    const uint64_t entry[8] = {__HYPERVISOR_update_va_mapping, 0xbad, c.guest->va(t).v, e | pte::RW, 0, 0, 0, 0};
    CHECK(put_words(c, list, entry, sizeof(entry)));
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, list.v, 1), 0);
    refused(c, long(load_or(c, list + 8)), pm, e, "multicall raise", t);
}

// A frame mapped writable cannot become a table.
void writable_never_a_table(Cpu& c)
{
    Gpfn w;
    if (!c.guest->frames().alloc(c, 1, w)) return rt::error("no frame");
    CHECK(zero_frame(c, w));   // valid as any empty table; only its writable mapping is wrong
    for (unsigned l = 1; l <= 4; ++l) CHECK_EQ(pt_pin(c, w, Level(l)), -XEN_EINVAL);
    CHECK_EQ(switch_base(c, w), -XEN_EINVAL);
    Gpfn l2;
    CHECK(pt_child(c, as.root(), table_index(probe(), Level::L3), l2));
    const unsigned free_slot = table_index(probe(), Level::L2) + 1;
    CHECK_EQ(pt_link(c, l2, free_slot, w), -XEN_EINVAL);
    CHECK(can_write(c, c.guest->va(w), 1));   // and it is still an ordinary writable page
    c.guest->frames().free(c, w);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, probe(), 2 * kPageSize, kProtRead | kProtWrite), 0);
    CHECK(c.mem.store(probe(), 1));
    collect(c);

    for (unsigned i = 0; i < nr_tables; ++i) {
        raise_in_physmap(c, tables[i]);
        map_elsewhere(c, tables[i]);
        in_multicall(c, tables[i]);
    }
    // One cmd-4 raise over the whole first physmap L1 (it maps every builder table).
    if (!rt::offers(needs::kFlagRange, "the cmd-4 raise over a whole physmap L1")) return;
    uint64_t l1[kEntriesPerTable], after[kEntriesPerTable];
    const Gpfn first_l1 = c.guest->physmap_pte(Gpfn{0}).table;
    CHECK(read_table(c, first_l1, l1));
    const Req fr{ptr_of(c, PteRef{first_l1, 0}, MMU_FLAG_RANGE_UPDATE),
                 pvmmu::abi::encode_flag_range(pte::RW, pte::RW, kEntriesPerTable)};
    uint32_t done;
    CHECK_EQ(raw_mmu_update(c, &fr, 1, done), -XEN_EINVAL);
    CHECK(read_table(c, first_l1, after));
    CHECK_EQ(table_diff(l1, after, true), 0);

    writable_never_a_table(c);

    // Every table is still read-only in the physmap and unchanged (A/D aside).
    for (unsigned i = 0; i < nr_tables; ++i) {
        uint64_t e = 0, now[kEntriesPerTable];
        CHECK(pte_read(c, c.guest->physmap_pte(tables[i]), e));
        CHECK(pte_present(e) && !(e & pte::RW));
        CHECK(read_table(c, tables[i], now));
        CHECK_EQ(table_diff(contents[i], now, true), 0);
    }
    rt::print("%u page tables, 10 ways each to map them writable: all refused", nr_tables);
}
