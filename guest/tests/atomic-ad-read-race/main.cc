// atomic-ad-read-race: the seed's race, made to happen every time. vCPU 0
// starts a protection change (ptep_modify_prot_start reads the entry: no D),
// then vCPU 1 writes the page (its walker sets D in the live entry), then vCPU 0
// commits the value computed from its stale read. With MMU_ATOMIC_PT_UPDATE the
// D set in between survives the install; with a plain write (cmd 0) it would be
// lost every time.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "cmd 2 install from a stale read (no D) keeps the D a writer set meanwhile";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr unsigned kPages = 64;
AddressSpace as;
std::atomic<int> posted{-1}, acked{-1};

Va region() { return as.base() + 4 * level_span(Level::L2); }

void updater(Cpu& c)
{
    unsigned raced = 0, survived = 0;
    for (unsigned i = 0; i < kPages; ++i) {
        PteRef r;
        if (!CHECK(as.pte_of(c, page(region(), i), r))) break;
        uint64_t old, mid, now;
        {
            PteLock l(c, r);
            CHECK_EQ(ptep_modify_prot_start(c, l, old), 0);
            CHECK(!(old & pte::D));
            posted.store(int(i), std::memory_order_release);
            rt::wait_until(c, [&] { return acked.load(std::memory_order_acquire) == int(i); });
            CHECK(pte_read(c, r, mid));
            raced += (mid & pte::D) != 0;   // the writer's walker set D after our read
            // A flag-only change computed from the stale value: toggle a software bit.
            CHECK_EQ(ptep_modify_prot_commit(c, l, old, old ^ pte::AVL10), 0);
        }
        CHECK(pte_read(c, r, now));
        survived += (now & pte::D) != 0;
        CHECK_EQ(now & ~pte::AD, (old ^ pte::AVL10) & ~pte::AD);
    }
    posted.store(int(kPages), std::memory_order_release);
    CHECK_EQ(raced, kPages);
    CHECK_EQ(survived, kPages);
    rt::print("lockstep race on %u entries: D set after the read %u times, survived the install %u times",
              kPages, raced, survived);
}

void writer(Cpu& c)
{
    for (int next = 0; next < int(kPages);) {
        rt::wait_until(c, [&] { return posted.load(std::memory_order_acquire) >= next; });
        const int i = posted.load(std::memory_order_acquire);
        if (i >= int(kPages)) break;
        CHECK(c.mem.store(page(region(), unsigned(i)) + 8, 0xd1d1));
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
    // Fault the pages in with reads, so they are present and still clean.
    for (unsigned i = 0; i < kPages; ++i) CHECK_EQ(load_or(c, page(region(), i)), 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK(!(pte_at(c, as, page(region(), i)) & pte::D));

    rt::on_all([&](Cpu& v) {
        if (v.id == 0) updater(v);
        else if (v.id == 1) writer(v);
    });
}
