// atomic-ad-preserve: writer vCPUs set A and D (their walkers, by locked
// compare-exchange on the live entry) while vCPU 0 keeps rewriting the same
// entries with cmd-2 arrays built from values it read before the writers
// started — the staleness of every batched update. Every page a writer touched
// must end accessed and dirty: cmd 2 loses no A/D bit.
#include "guest/mmu_batch.h"
#include "guest/tlb.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "cmd-2 flag changes while other vCPUs set A/D: no A/D bit lost";
const TestConfig test_config = {.cpus = 3};

namespace {

constexpr unsigned kPages = 256;   // in one L1
constexpr unsigned kRounds = 40;
AddressSpace as;
std::atomic<unsigned> writers_done{0};
std::atomic<uint8_t> written[kPages];

Va region() { return as.base() + 4 * level_span(Level::L2); }

// A and D cleared on every entry (clear_entry_bits) and a flush everywhere: no
// TLB holds the pages, so each access of the round walks and sets its bits.
void clear_ad(Cpu& c, Gpfn l1, unsigned first)
{
    clear_entry_bits(c, l1, first, kPages, pte::AD);
    FlushPlan all(0);
    all.add(region());
    CHECK_EQ(flush_tlb(c, all, as.vcpus()), 0);
}

// cmd-2 arrays from `stale` until the writers are done, then once more.
unsigned rewrite(Cpu& c, Gpfn l1, unsigned first, const uint64_t* stale)
{
    unsigned passes = 0;
    const unsigned writers = rt::nr_vcpus() - 1;
    for (bool last = false; !last; ++passes) {
        last = writers_done.load(std::memory_order_acquire) == writers;
        SpinGuard g(c, c.guest->pte_lock(l1));
        MmuBatch b(c, l1, kPages);
        const uint64_t flip = (passes & 1) ? pte::AVL10 : 0;
        for (unsigned i = 0; i < kPages; ++i) CHECK_EQ(b.add(MMU_ATOMIC_PT_UPDATE, first + i, stale[i] ^ flip), 0);
        CHECK_EQ(b.flush(), 0);
    }
    return passes;
}

void updater(Cpu& c, rt::Barrier& bar)
{
    PteRef r0;
    if (!CHECK(as.pte_of(c, region(), r0))) return;
    uint64_t stale[kPages];
    uint64_t lost = 0, checked = 0, passes = 0;
    for (unsigned round = 0; round < kRounds; ++round) {
        clear_ad(c, r0.table, r0.index);
        for (unsigned i = 0; i < kPages; ++i) CHECK(pte_read(c, PteRef{r0.table, r0.index + i}, stale[i]));
        writers_done.store(0, std::memory_order_release);
        bar.wait(c);
        passes += rewrite(c, r0.table, r0.index, stale);
        bar.wait(c);
        for (unsigned i = 0; i < kPages; ++i) {
            uint64_t e = 0;
            CHECK(pte_read(c, PteRef{r0.table, r0.index + i}, e));
            if (!written[i].load(std::memory_order_acquire)) continue;
            ++checked;
            lost += (e & pte::AD) != pte::AD;
        }
    }
    bar.wait(c);   // lets the writers leave
    CHECK_EQ(checked, uint64_t(kPages) * kRounds);
    CHECK_EQ(lost, 0);
    rt::print("%u rounds, %llu cmd-2 passes over %u entries, %llu written pages checked, %llu lost A/D",
              kRounds, (unsigned long long)passes, kPages, (unsigned long long)checked, (unsigned long long)lost);
}

void writer(Cpu& c, rt::Barrier& bar)
{
    const unsigned writers = rt::nr_vcpus() - 1;
    for (unsigned round = 0; round < kRounds; ++round) {
        bar.wait(c);
        // Each flag is rewritten every round, after the updater's check of the last.
        for (unsigned i = c.id - 1; i < kPages; i += writers)
            written[i].store(c.mem.store(page(region(), i) + 8, round), std::memory_order_release);
        writers_done.fetch_add(1, std::memory_order_acq_rel);
        bar.wait(c);
    }
    bar.wait(c);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK(c.mem.store(page(region(), i), i));
    rt::Barrier bar(rt::nr_vcpus());
    rt::on_all([&](Cpu& v) {
        if (v.id == 0) updater(v, bar);
        else writer(v, bar);
    });
}
