// type-change-race: two vCPUs race a frame between "page table" and "writable
// page". Models the class of Xen advisories about races in PV page-type
// changes (XSA-401: a race in type-reference acquisition that left a writable
// translation behind a type change): the attacker wins if, even once, the
// frame is a pinned page table while a writable mapping of it exists or a
// store lands in it.
// vCPU 1 loops: map frame F writable at an entry E of the test L1 (cmd 2),
// store a marker into F through it, put E back (cmd 2, no flush: its TLB may
// keep the writable translation) and store through it again. vCPU 0 loops:
// pin F as an L1; when that succeeds, E must not map F writable, a writable
// mapping of F is refused, and F must not change until vCPU 0 unpins it (the
// hypervisor flushes vCPU 1's stale translation before the type change).
// Every refusal on either side is -EINVAL (on Xen a refused writable mapping
// is -EBUSY: writable_table_map_errno).
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "racing pin against writable mappings of the same frame: never both at once";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr unsigned kPins = 500, kEntry = 7, kHold = 2;
TestL1 t;
Gpfn f;
uint64_t orig_e;
std::atomic<bool> stop{false};
std::atomic<unsigned> pins_ok{0}, maps_ok{0}, wrong{0};

void mapper(Cpu& v)
{
    const Va at = v.guest->va(t.gpfn(kEntry));
    const Req map{ptr_of(v, t.ref(kEntry), MMU_ATOMIC_PT_UPDATE), make_pte(v.guest->mfn(f), pte::P | pte::RW | pte::US)};
    const Req back{ptr_of(v, t.ref(kEntry), MMU_ATOMIC_PT_UPDATE), orig_e};
    for (uint64_t n = 1; !stop.load(std::memory_order_acquire); ++n) {
        uint32_t done;
        const long rc = raw_mmu_update(v, &map, 1, done);
        if (rc == writable_table_map_errno()) continue;   // F is a page table now
        if (rc != 0) {
            rt::fail("writable mapping: rc %ld", rc);
            break;
        }
        maps_ok.fetch_add(1, std::memory_order_relaxed);
        (void)v.mem.store(at, n << 1);   // P = 0: a swap-style value, valid in an L1
        if (raw_mmu_update(v, &back, 1, done) != 0) rt::fail("putting E back");
        v.hc.relax();   // a window for vCPU 0
        // Through a translation that may be stale: into F while F is no table,
        // into E's own frame once vCPU 0's pin has flushed this vCPU.
        (void)v.mem.store(at, (n << 1) | 0x100);
    }
}

void pinner(Cpu& c)
{
    for (unsigned i = 0; i < kPins; ++i) {
        for (unsigned k = 0; k < kHold; ++k) c.hc.relax();   // a window for vCPU 1
        const long rc = pt_pin(c, f, Level::L1);
        if (rc == -XEN_EINVAL) continue;   // mapped writable just now
        if (rc != 0) {
            rt::fail("pin: rc %ld", rc);
            break;
        }
        pins_ok.fetch_add(1, std::memory_order_relaxed);
        uint64_t first[kEntriesPerTable], again[kEntriesPerTable], e = 0;
        CHECK(read_table(c, f, first));
        // While pinned, no writable mapping is taken, here either.
        const PteRef mine = t.ref(kEntry + 1);
        attack_entry(c, mine, Req{ptr_of(c, mine, MMU_ATOMIC_PT_UPDATE), make_pte(c.guest->mfn(f), pte::P | pte::RW | pte::US)},
                     writable_table_map_errno(), "writable mapping of the pinned frame");
        for (unsigned k = 0; k < kHold; ++k) c.hc.relax();   // vCPU 1 keeps trying meanwhile
        CHECK(pte_read(c, t.ref(kEntry), e));
        CHECK(read_table(c, f, again));
        if ((pte_present(e) && (e & pte::RW) && pte_mfn(e) == c.guest->mfn(f)) || table_diff(first, again))
            wrong.fetch_add(1, std::memory_order_relaxed);
        CHECK_EQ(pt_unpin(c, f), 0);
    }
    stop.store(true, std::memory_order_release);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!reserve_test_l1(c, t)) return;
    CHECK(pte_read(c, t.ref(kEntry), orig_e));
    if (!c.guest->frames().alloc(c, 1, f)) return rt::error("no frame");
    CHECK(zero_frame(c, f));
    CHECK_EQ(physmap_set_writable(c, f, false), 0);

    rt::on_all([](Cpu& v) {
        if (v.id == 0) pinner(v);
        else if (v.id == 1) mapper(v);
    });
    CHECK_EQ(wrong.load(), 0);
    rt::print("%u pins and %u writable mappings won their turn, %u times both at once", pins_ok.load(), maps_ok.load(),
              wrong.load());
    if (pins_ok.load() == 0 || maps_ok.load() == 0) rt::print("(one side never won: the race was not exercised)");
    uint64_t e = 0;
    CHECK(pte_read(c, t.ref(kEntry), e));
    CHECK_EQ(e & ~pte::AD, orig_e & ~pte::AD);
    CHECK_EQ(physmap_set_writable(c, f, true), 0);   // no type left behind
}
