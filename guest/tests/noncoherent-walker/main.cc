// noncoherent-walker: on a machine whose page walkers do not snoop the data
// cache (docs/design.md §5), every PTE write the library makes is followed by a clean, and
// a new table's zeroing is cleaned before the table is linked. Checked by
// behaviour and by count:
//   - demand-zero pages, mprotect (cmd 4 over a full L1) and the fault path work
//     on both vCPUs, which they would not if a walker missed a write;
//   - a full-L1 mprotect cleans exactly its 64 cache lines, and the platform
//     saw exactly the cleans the library counted;
//   - a frame whose stale cached lines still map a page becomes an L1 again:
//     the walker must see the zeroed table, not the stale mapping, and the guest
//     cleaned every zeroed line itself (the core also cleans the tables it
//     validates or writes — the two halves of docs/design.md §5's property).
#include "guest/pagetable.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "non-coherent walker: PTE writes cleaned, new tables cleaned before they are linked";
const TestConfig test_config = {.cpus = 2, .coherent_walker = false};

namespace {

constexpr unsigned rw = kProtRead | kProtWrite;
AddressSpace as;

Va full() { return as.base() + 2 * level_span(Level::L2); }       // one whole L1
Va fresh() { return as.base() + 3 * level_span(Level::L3); }      // a new L2 and L1

uint64_t platform_cleans()
{
    uint64_t n = 0;
    for (unsigned v = 0; v < rt::nr_vcpus(); ++v) {
        rt::PlatformCounters pc;
        if (rt::platform_counters(v, pc)) n += pc.cleans;
    }
    return n;
}

void full_l1(Cpu& c)
{
    CHECK_EQ(as.map_anon(c, full(), kEntriesPerTable * kPageSize, rw), 0);
    for (unsigned i = 0; i < kEntriesPerTable; ++i) CHECK(c.mem.store(page(full(), i), i));
    const Snap a = snap(c);
    CHECK_EQ(as.mprotect(c, full(), kEntriesPerTable * kPageSize, kProtRead), 0);
    CHECK_EQ(snap(c).cleans - a.cleans, kEntriesPerTable / kPteLine);
    rt::on_all([&](Cpu& v) {
        unsigned bad = 0;
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            bad += load_or(v, page(full(), i)) != i;
            bad += can_write(v, page(full(), i) + 8, 1);
        }
        CHECK_EQ(bad, 0);
    });
    const Snap b = snap(c);
    CHECK_EQ(as.mprotect(c, full(), kEntriesPerTable * kPageSize, rw), 0);
    CHECK_EQ(snap(c).cleans - b.cleans, kEntriesPerTable / kPteLine);
    rt::on_all([&](Cpu& v) {
        unsigned bad = 0;
        for (unsigned i = 0; i < kEntriesPerTable; ++i) bad += !can_write(v, page(full(), i) + 8, 2);
        CHECK_EQ(bad, 0);
    });
}

// Two frames whose cached lines (what the walker sees) say: entry `i2` of the
// first (to be an L2) links the second, whose entry k maps `victim`. Then both
// are freed, and the next two tables the library allocates are exactly them.
void stale_tables(Cpu& c)
{
    const unsigned k = 100;   // a page never touched, in another line than page 0
    Gpfn y, victim;
    if (!c.guest->frames().alloc(c, 2, y) || !c.guest->frames().alloc(c, 1, victim)) return rt::error("no frames");
    const Gpfn x{y.v + 1};
    CHECK(c.mem.store(c.guest->va(victim), 0x57a1e));
    const unsigned i2 = table_index(fresh(), Level::L2);
    const Va ye = c.guest->va(y) + i2 * 8, xe = c.guest->va(x) + k * 8;
    CHECK(c.mem.store(ye, make_pte(c.guest->mfn(x), pte::P | pte::RW | pte::US | pte::A)));
    CHECK(c.mem.store(xe, make_pte(c.guest->mfn(victim), pte::P | pte::RW | pte::US | pte::A | pte::D)));
    c.mem.clean(ye);
    c.mem.clean(xe);
    c.guest->frames().free(c, x);
    c.guest->frames().free(c, y);

    CHECK_EQ(as.map_anon(c, fresh(), kEntriesPerTable * kPageSize, rw), 0);
    const uint64_t cleans0 = c.stats.cleans.get();
    CHECK(c.mem.store(page(fresh(), 0), 1));   // allocates the L2 (y) and the L1 (x)
    // Per new table: its 64 zeroed lines, its read-only physmap entry, its link;
    // then the demand-zero entry.
    CHECK_EQ(c.stats.cleans.get() - cleans0, 2 * (kEntriesPerTable / kPteLine + 2) + 1);
    PteRef r;
    CHECK(as.pte_of(c, fresh(), r));
    CHECK_EQ(r.table.v, x.v);
    // Page k has no entry: reading it is a demand-zero fault, not the victim.
    const uint64_t dz = c.stats.demand_zero.get();
    CHECK_EQ(load_or(c, page(fresh(), k)), 0);
    CHECK_EQ(c.stats.demand_zero.get() - dz, 1);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    full_l1(c);
    stale_tables(c);
    // Every clean the platform saw was the library's, but the two the test made.
    rt::PlatformCounters pc;
    if (rt::platform_counters(0, pc)) {
        std::atomic<uint64_t> lib{0};
        rt::on_all([&](Cpu& v) { lib += v.stats.cleans.get(); });
        CHECK_EQ(platform_cleans(), lib.load() + 2);
    }
}
