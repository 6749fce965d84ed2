// no-spurious-with-xchg: Lameter's point, measured exactly. vCPU 0 changes a
// mapped page's entry (holding its lock, as Linux holds the PTE lock) through
// a transport that, after every hypercall of the change, has vCPU 1 touch the
// page with a cold TLB — so vCPU 1 looks at every state the entry passes
// through, whatever the host's scheduling:
//   clear-then-set (ptep_get_and_clear, set_pte): vCPU 1 finds the entry empty,
//     faults, waits in its fault handler for the lock, then finds the page mapped
//     again: one spurious fault per change;
//   ptep_xchg (one cmd-2 install): the entry is never empty: no fault at all.
// Counted by the library's fault handler. The fault must not map a fresh zero
// page over the data either (the race the PTE lock exists for).
#include "guest/tlb.h"
#include "guest_test_util.h"
#include "probing.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "clear-then-set makes other vCPUs fault spuriously, ptep_xchg never";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr int kRounds = 100;
constexpr uint64_t kData = 0xda7a'da7a;
AddressSpace as;
Cpu* toucher = nullptr;   // vCPU 1
std::atomic<int> posted{-1}, acked{-1};
std::atomic<bool> stop{false};

Va target() { return as.base() + 6 * level_span(Level::L2); }

// A probe after every hypercall of the change: vCPU 1 drops its TLB entry and
// reads the page. It either completes, or blocks in its fault handler on the
// lock vCPU 0 holds — then it is not probed again until the change is over.
struct Prober {
    int seq = -1;
    bool blocked = false;
    Transport* relax_on = nullptr;

    static void probe(void* p)
    {
        Prober& pr = *static_cast<Prober*>(p);
        if (pr.blocked) return;
        const uint64_t faults0 = toucher->stats.faults.get();
        posted.store(++pr.seq, std::memory_order_release);
        while (acked.load(std::memory_order_acquire) != pr.seq) {
            if (toucher->stats.faults.get() != faults0) {
                pr.blocked = true;
                return;
            }
            pr.relax_on->relax();
        }
    }
    // After the lock is released: the last probe completes.
    void finish()
    {
        while (acked.load(std::memory_order_acquire) != seq) relax_on->relax();
        blocked = false;
    }
};

void changer(Cpu& c, bool xchg)
{
    PteRef r;
    if (!CHECK(as.pte_of(c, target(), r))) return;
    Prober prober;
    prober.relax_on = &c.hc;
    ProbedCpu probed(c, ~0u, false, Prober::probe, &prober);
    Cpu& spy = probed.cpu;
    for (int round = 0; round < kRounds; ++round) {
        {
            PteLock l(spy, r);
            uint64_t old = 0, cur = 0;
            CHECK(pte_read(spy, r, cur));
            if (xchg) {
                CHECK_EQ(ptep_xchg(spy, l, cur ^ pte::AVL10, old), 0);
            } else {
                CHECK_EQ(ptep_get_and_clear(spy, l, old), 0);
                CHECK_EQ(set_pte(spy, l, old ^ pte::AVL10), 0);
            }
        }
        prober.finish();
    }
    stop.store(true, std::memory_order_release);
}

// vCPU 1: on every probe, drop its TLB entry and read the page.
void touch(Cpu& c)
{
    for (int seen = -1;;) {
        rt::wait_until(c, [&] { return posted.load(std::memory_order_acquire) != seen || stop.load(); });
        if (posted.load(std::memory_order_acquire) == seen) return;
        seen = posted.load(std::memory_order_acquire);
        CHECK_EQ(flush_local_page(c, target()), 0);
        CHECK_EQ(load_or(c, target()), kData);
        acked.store(seen, std::memory_order_release);
    }
}

// One mode: vCPU 1's fault counters over it.
Snap mode(bool xchg)
{
    stop.store(false);
    const Snap s0 = snap(*toucher);
    rt::on_all([&](Cpu& v) {
        if (v.id == 0) changer(v, xchg);
        else if (v.id == 1) touch(v);
    });
    const Snap s1 = snap(*toucher);
    Snap d{};
    d.faults = s1.faults - s0.faults;
    d.spurious = s1.spurious - s0.spurious;
    d.spurious_read = s1.spurious_read - s0.spurious_read;
    d.demand_zero = s1.demand_zero - s0.demand_zero;
    return d;
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, target(), kPageSize, kProtRead | kProtWrite), 0);
    CHECK(c.mem.store(target(), kData));
    rt::on_all([&](Cpu& v) {
        if (v.id == 1) toucher = &v;
    });

    const Snap clear_set = mode(false);
    const Snap xchg = mode(true);
    rt::print("clear-then-set: %llu faults on vCPU 1, %llu spurious; ptep_xchg: %llu faults, %llu spurious",
              (unsigned long long)clear_set.faults, (unsigned long long)clear_set.spurious,
              (unsigned long long)xchg.faults, (unsigned long long)xchg.spurious);
    CHECK_EQ(clear_set.faults, kRounds);
    CHECK_EQ(clear_set.spurious, kRounds);
    CHECK_EQ(clear_set.spurious_read, kRounds);
    CHECK_EQ(clear_set.demand_zero, 0);
    CHECK_EQ(xchg.faults, 0);
    CHECK_EQ(xchg.spurious, 0);
    CHECK_EQ(load_or(c, target()), kData);
}
