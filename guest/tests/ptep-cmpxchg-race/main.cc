// ptep-cmpxchg-race: vCPUs race ptep_cmpxchg on one entry.
//   Lockstep (every round, whatever the host's scheduling): vCPUs 0 and 1 read
//   the same value; vCPU 1 holds the entry's lock while vCPU 0 tries its
//   cmpxchg, then does its own. Exactly one wins — vCPU 1, the first in — and
//   vCPU 0's cmpxchg never completes while vCPU 1 is inside: a compare made
//   over a hypercall is atomic only because every writer serializes there.
//   Free race: every vCPU turns the counter in the entry's software bits into
//   the next value (read, cmpxchg, retry — the seeds' update loop). Every value
//   is won exactly once, none is lost, and a failure always means a real
//   change, never an A/D bit (ignored by the compare, kept by the cmd-2 install).
// The counter lives in bits 11:9 and 58:53, which both hypervisors leave to the
// guest. Not bit 52: Xen (64-bit PV) marks an entry the guest wrote without US
// by setting bit 52 (its _PAGE_GUEST_KERNEL) as well as US, and an entry with US
// but not bit 52 it takes for a user mapping and may make global (G, bit 8); a
// counter through bit 52 started at 8 there and changed G on the way.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "ptep_cmpxchg raced by every vCPU: exactly one wins each value";
const TestConfig test_config = {.cpus = 4};

namespace {

constexpr unsigned kRounds = 100;
constexpr unsigned kPatience = 300;   // relax()es vCPU 1 gives vCPU 0 to get in
unsigned per_vcpu = 200;   // fewer with many vCPUs: the counter has 9 bits
constexpr unsigned kMaxCount = 512;   // 9 bits: AVL 11:9 and 58:53
constexpr unsigned kEntry = 7;
TestL1 t;
std::atomic<unsigned> wins_of[kMaxCount];   // successful cmpxchgs from each count
// holding: the round vCPU 1 is inside the entry's lock in (-1 outside);
// entered: the last round it got in (never reset, so vCPU 0 cannot miss it).
std::atomic<int> holding{-1}, entered{-1}, finished0{-1};
std::atomic<unsigned> overlaps{0}, wins0{0}, wins1{0};

constexpr uint64_t kCountBits = (7ull << 9) | (0x3full << 53);
uint64_t count_of(uint64_t e) { return ((e >> 9) & 7) | (((e >> 53) & 0x3f) << 3); }
uint64_t with_count(uint64_t e, uint64_t n)
{
    return (e & ~kCountBits) | ((n & 7) << 9) | (((n >> 3) & 0x3f) << 53);
}

void lockstep(Cpu& c, rt::Barrier& bar)
{
    for (int round = 0; round < int(kRounds); ++round) {
        bar.wait(c);
        uint64_t seen = 0, cur = 0;
        CHECK(pte_read(c, t.ref(kEntry), seen));
        bar.wait(c);   // both have read before anyone writes
        bool swapped = false;
        const uint64_t mine = seen ^ (uint64_t(c.id + 1) << 53);
        if (c.id == 1) {
            PteLock l(c, t.ref(kEntry));
            holding.store(round, std::memory_order_release);
            entered.store(round, std::memory_order_release);
            for (unsigned k = 0; k < kPatience && finished0.load(std::memory_order_acquire) != round; ++k) c.hc.relax();
            CHECK_EQ(ptep_cmpxchg(c, l, seen, mine, cur, swapped), 0);
            wins1 += swapped;
            holding.store(-1, std::memory_order_release);
        } else if (c.id == 0) {
            rt::wait_until(c, [&] { return entered.load(std::memory_order_acquire) == round; });
            {
                PteLock l(c, t.ref(kEntry));
                CHECK_EQ(ptep_cmpxchg(c, l, seen, mine, cur, swapped), 0);
                overlaps += holding.load(std::memory_order_acquire) == round;
            }
            wins0 += swapped;
            finished0.store(round, std::memory_order_release);
        }
    }
    bar.wait(c);
}

void racer(Cpu& c, rt::Barrier& bar)
{
    bar.wait(c);
    unsigned won = 0, lost_to_ad = 0;
    while (won < per_vcpu) {
        uint64_t seen = 0, cur = 0;
        CHECK(pte_read(c, t.ref(kEntry), seen));
        bool swapped = false;
        {
            PteLock l(c, t.ref(kEntry));
            CHECK_EQ(ptep_cmpxchg(c, l, seen, with_count(seen, count_of(seen) + 1), cur, swapped), 0);
        }
        if (swapped) {
            wins_of[count_of(seen) % kMaxCount].fetch_add(1, std::memory_order_acq_rel);
            ++won;
        } else {
            lost_to_ad += ((cur ^ seen) & ~pte::AD) == 0;
        }
    }
    CHECK_EQ(lost_to_ad, 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (per_vcpu * rt::nr_vcpus() >= kMaxCount) per_vcpu = (kMaxCount - 1) / rt::nr_vcpus();
    const unsigned total = per_vcpu * rt::nr_vcpus();
    if (!reserve_test_l1(c, t)) return;
    uint64_t e0 = 0;
    CHECK(pte_read(c, t.ref(kEntry), e0));
    CHECK_EQ(count_of(e0), 0);

    rt::Barrier bar(rt::nr_vcpus());
    rt::on_all([&](Cpu& v) { lockstep(v, bar); });
    rt::print("lockstep: %u rounds, vCPU 1 (holding the lock first) won %u, vCPU 0 won %u, "
              "%u cmpxchgs completed inside another's", kRounds, wins1.load(), wins0.load(), overlaps.load());
    CHECK_EQ(wins1.load(), kRounds);
    CHECK_EQ(wins0.load(), 0);
    CHECK_EQ(overlaps.load(), 0);

    {
        PteLock l(c, t.ref(kEntry));   // back to the start value for the counter
        uint64_t old;
        CHECK_EQ(ptep_xchg(c, l, e0, old), 0);
    }
    rt::on_all([&](Cpu& v) { racer(v, bar); });

    uint64_t e1 = 0;
    CHECK(pte_read(c, t.ref(kEntry), e1));
    unsigned once = 0, twice = 0;
    for (unsigned n = 0; n < total; ++n) {
        once += wins_of[n].load() == 1;
        twice += wins_of[n].load() > 1;
    }
    rt::print("%u vCPUs x %u increments: final count %llu, %u values won once, %u won more than once",
              rt::nr_vcpus(), per_vcpu, (unsigned long long)count_of(e1), once, twice);
    CHECK_EQ(count_of(e1), total);
    CHECK_EQ(once, total);
    CHECK_EQ(e1 & ~(kCountBits | pte::AD), e0 & ~(kCountBits | pte::AD));
}
