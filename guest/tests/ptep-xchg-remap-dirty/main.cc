// ptep-xchg-remap-dirty: ptep_xchg that moves a live entry to another frame
// while a writer dirties the old page between the xchg's read of the entry and
// its install — every time: a probe before the xchg's first hypercall hands
// the page to vCPU 1 and waits for its store. The D bit
// belongs to the old frame, so:
//   - `old` reports it, also when the new value carries D itself (the library
//     masked nv's own A/D out of what it read back, so a caller that writes
//     dirty pages back lost that write-back);
//   - the new entry does not inherit it: the new page was never written.
// The store must have landed in the old frame. Then each page is moved, raced
// the same way, to a frame the hypervisor refuses (one of its own): the xchg
// fails with -EPERM and must leave the old mapping, with the D the writer set
// — before the fix the entry stayed cleared, holding bare A/D bits. Last, with
// cmd 0 denied, the pages go back to their frames (frame changes too,
// unraced): cmd 2 alone must do them.
#include "guest_test_util.h"
#include "probing.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "ptep_xchg to another frame reports the D a writer set on the old one, and moves none";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr unsigned kPages = 32;
constexpr uint64_t kStamp = 0xd1d1'0000;
AddressSpace as;
std::atomic<int> posted{-1}, acked{-1};   // 0 .. kPages - 1, then kPages .. 2 kPages - 1
uint64_t original[kPages];

Va region() { return as.base() + 4 * level_span(Level::L2); }
Va spare() { return as.base() + 8 * level_span(Level::L2); }   // the frames moved in

// Before the first mmu_update of one xchg only: the writer stores to the page.
struct Race {
    Cpu* c = nullptr;
    int page = -1;
    bool fired = false;

    static void before_install(void* p)
    {
        Race& r = *static_cast<Race*>(p);
        if (r.fired) return;
        r.fired = true;
        posted.store(r.page, std::memory_order_release);
        rt::wait_until(*r.c, [&] { return acked.load(std::memory_order_acquire) == r.page; });
    }
};

void changer(Cpu& c)
{
    Race race;
    ProbedCpu probed(c, __HYPERVISOR_mmu_update, true, Race::before_install, &race);
    Cpu& spy = probed.cpu;
    unsigned reported = 0, inherited = 0, landed = 0;
    for (unsigned i = 0; i < kPages; ++i) {
        const bool nv_dirty = i % 2 == 0;   // half the new values carry D themselves
        PteRef r;
        if (!CHECK(as.pte_of(c, page(region(), i), r))) break;
        uint64_t seen = 0, old = 0, now = 0;
        CHECK(pte_read(c, r, seen));
        CHECK(pte_present(seen) && !(seen & pte::D));
        original[i] = seen;
        const uint64_t other = pte_at(c, as, page(spare(), i));
        const uint64_t nv = (seen & ~(pte::ADDR | pte::AD)) | (other & pte::ADDR) | pte::A | (nv_dirty ? pte::D : 0);
        race = Race{&c, int(i), false};
        {
            PteLock l(spy, r);
            CHECK_EQ(ptep_xchg(spy, l, nv, old), 0);
        }
        CHECK(race.fired);
        CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_ALL, 0), 0);   // the writer's translation of the old frame
        CHECK(pte_read(c, r, now));
        reported += (old & pte::D) != 0;
        inherited += !nv_dirty && (now & pte::D);
        CHECK_EQ(old, seen | pte::D);   // exactly: the frame, its flags, A from before, D from the writer
        CHECK_EQ(now, nv);
        Gpfn g;
        CHECK(c.guest->gpfn_of(pte_mfn(seen), g));
        landed += load_or(c, c.guest->va(g) + 8) == kStamp + i;
    }
    rt::print("%u remaps raced by a store: D reported in old %u times (new value with D: %u of them), "
              "D carried into the new frame's entry %u times, stores in the old frame %u",
              kPages, reported, kPages / 2, inherited, landed);
    CHECK_EQ(reported, kPages);
    CHECK_EQ(inherited, 0);
    CHECK_EQ(landed, kPages);

    // To a frame the hypervisor refuses, the writer's store racing again.
    if (!rt::offers(needs::kPvmmuOp, "remaps to a frame the hypervisor refuses (pvmmu_op names one)")) {
        posted.store(int(2 * kPages), std::memory_order_release);   // the writer is done
        return;
    }
    unsigned kept = 0;
    for (unsigned i = 0; i < kPages; ++i) {
        PteRef r;
        if (!CHECK(as.pte_of(c, page(region(), i), r))) break;
        uint64_t seen = 0, old = 0, now = 0;
        CHECK(pte_read(c, r, seen));
        const uint64_t nv = (seen & ~(pte::ADDR | pte::AD)) | make_pte(rt::hypervisor_frame(), 0);
        race = Race{&c, int(kPages + i), false};
        long rc;
        {
            PteLock l(spy, r);
            rc = ptep_xchg(spy, l, nv, old);
        }
        CHECK(race.fired);
        CHECK(pte_read(c, r, now));
        kept += rc == -XEN_EPERM && now == (seen | pte::D) && old == (seen | pte::D);
        if (rc != -XEN_EPERM || now != (seen | pte::D) || old != (seen | pte::D))
            rt::fail("page %u: rc %ld, entry %#llx (was %#llx), old %#llx", i, rc, (unsigned long long)now,
                     (unsigned long long)seen, (unsigned long long)old);
    }
    posted.store(int(2 * kPages), std::memory_order_release);
    rt::print("%u refused remaps raced by a store: the old mapping kept with the writer's D, reported in old, "
              "%u times", kPages, kept);
    CHECK_EQ(kept, kPages);
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_ALL, 0), 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK_EQ(load_or(c, page(region(), i) + 16), kStamp + kPages + i);
}

// With cmd 0 denied, back to the frames the address space gave these pages.
void move_back(Cpu& c)
{
    if (!rt::offers(needs::kPvmmuOp, "moving back with cmd 0 denied")) return;
    if (!CHECK(rt::deny(deny::kMmuNormal))) return;
    unsigned moved = 0;
    for (unsigned i = 0; i < kPages; ++i) {
        PteRef r;
        uint64_t old = 0;
        if (!CHECK(as.pte_of(c, page(region(), i), r))) break;
        PteLock l(c, r);
        moved += CHECK_EQ(ptep_xchg(c, l, original[i] | pte::D, old), 0);
    }
    rt::print("%u of %u pages moved back to their frames with cmd 0 denied", moved, kPages);
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_ALL, 0), 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK_EQ(load_or(c, page(region(), i) + 8), kStamp + i);
}

void writer(Cpu& c)
{
    for (int next = 0; next < int(2 * kPages);) {
        rt::wait_until(c, [&] { return posted.load(std::memory_order_acquire) >= next; });
        const int i = posted.load(std::memory_order_acquire);
        if (i >= int(2 * kPages)) break;
        const unsigned p = unsigned(i) % kPages, at = i < int(kPages) ? 8 : 16;
        CHECK(c.mem.store(page(region(), p) + at, kStamp + unsigned(i)));
        acked.store(i, std::memory_order_release);
        next = i + 1;
    }
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    CHECK_EQ(as.map_anon(c, spare(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    // Fault the pages in with reads: present and still clean.
    for (unsigned i = 0; i < kPages; ++i) {
        CHECK_EQ(load_or(c, page(region(), i)), 0);
        CHECK_EQ(load_or(c, page(spare(), i)), 0);
    }
    rt::on_all([&](Cpu& v) {
        if (v.id == 0) changer(v);
        else if (v.id == 1) writer(v);
    });
    move_back(c);
}
