// stale-mapping-after-unpin: a frame goes from page table to ordinary page and
// back. While it is ordinary, vCPU 1 writes it through the physmap and so
// caches a writable TLB entry. vCPU 0 then drops the physmap mapping to
// read-only without any flush — the stale writable entry on vCPU 1 still works,
// legitimately, while the frame is just a page — and pins the frame as a table
// again: as the L1 it was, or retyped as an L2 (every other round). From that
// moment no TLB may still map it writable (docs/design.md §4: the hypervisor flushes the
// CPUs that may before it retypes the frame): vCPU 1's next write faults, and
// the new table is exactly what vCPU 0 pinned. This is the class of Xen
// advisories about TLB entries that survive a change they should not (e.g.
// XSA-408: a flush condition that omitted necessary flushes for PV guests).
// vCPU 1's store is an entry no hypervisor may accept into a table: one
// mapping the table itself writable. A store to an L1 in use through a
// read-only mapping is not simply a fault: Xen and pvmmu emulate it as a
// checked update of the entry ("writable page tables", abi.md §12.5), so a
// valid entry stored there lands; this one is refused and faults on both,
// and only a stale writable TLB entry could put it into the table. On pvmmu
// a writable mapping of gpfn 0 (its L4) is tried as well.
#include "guest/pagetable.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "once a frame becomes a page table again no TLB maps it writable";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr unsigned kRounds = 20;

template <class F>
void on_vcpu(unsigned id, F&& fn)
{
    rt::on_all([&](Cpu& v) {
        if (v.id == id) fn(v);
    });
}

uint64_t served(unsigned vcpu)
{
    rt::PlatformCounters pc;
    return rt::platform_counters(vcpu, pc) ? pc.shootdowns_served : 0;
}

void round(Cpu& c, Gpfn x, Level again)
{
    const Va va = c.guest->va(x);
    const PteRef pm = c.guest->physmap_pte(x);
    // A table, then not: pinned and unpinned, writable again.
    CHECK(zero_frame(c, x));
    CHECK_EQ(physmap_set_writable(c, x, false), 0);
    CHECK_EQ(pt_pin(c, x, Level::L1), 0);
    CHECK_EQ(pt_unpin(c, x), 0);
    CHECK_EQ(physmap_set_writable(c, x, true), 0);

    on_vcpu(1, [&](Cpu& v) { CHECK(v.mem.store(va + 8, 0)); });   // caches a writable entry

    // Read-only with a bare cmd 2, no flush anywhere.
    uint64_t e = 0;
    CHECK(pte_read(c, pm, e));
    uint32_t done;
    const Req ro{ptr_of(c, pm, MMU_ATOMIC_PT_UPDATE), e & ~pte::RW};
    CHECK_EQ(raw_mmu_update(c, &ro, 1, done), 0);
    on_vcpu(1, [&](Cpu& v) { CHECK(v.mem.store(va + 16, 0)); });   // the stale entry still writes

    rt::PlatformCounters pc;
    const bool counted = rt::platform_counters(1, pc);   // where the platform can tell
    const uint64_t served0 = served(1);
    CHECK_EQ(pt_pin(c, x, again), 0);
    if (counted) CHECK(served(1) > served0);   // vCPU 1 was flushed before the retype

    on_vcpu(1, [&](Cpu& v) {
        CHECK(!v.mem.store(va + 24, make_pte(v.guest->mfn(x), pte::P | pte::RW | pte::US)));
        if (rt::pvmmu_op_available())
            CHECK(!v.mem.store(va + 32, make_pte(v.guest->mfn(Gpfn{0}), pte::P | pte::RW | pte::US)));
    });
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, x, now));
    unsigned nonzero = 0;
    for (uint64_t w : now) nonzero += w != 0;
    CHECK_EQ(nonzero, 0);

    CHECK_EQ(pt_unpin(c, x), 0);
    CHECK_EQ(physmap_set_writable(c, x, true), 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    Gpfn x;
    if (!c.guest->frames().alloc(c, 1, x)) return rt::error("no frame");
    for (unsigned i = 0; i < kRounds; ++i) round(c, x, i % 2 ? Level::L2 : Level::L1);
    c.guest->frames().free(c, x);
}
