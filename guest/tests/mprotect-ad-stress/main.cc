// mprotect-ad-stress: mprotect while other vCPUs write; every written page must
// end dirty — no D bit lost to a batched protection change. Each round starts
// with every entry clean and no TLB holding the region, so each first write
// sets D in the live entry while mprotect's batches change the same entries.
//   Probed: right before each of mprotect's mmu_update hypercalls — after it
//     read the entries it is about to change — the writers write every page.
//     The worst moment, every time, whatever the host's scheduling (a
//     read-modify-write with cmd 0 loses those bits every round).
//   Free: vCPU 0 cycles RW, RW+EXEC, RO, NONE, ... while the writers write
//     every page, retrying the ones refused, until all are written.
#include "guest/mmu_batch.h"
#include "guest/tlb.h"
#include "guest_test_util.h"
#include "probing.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "mprotect while other vCPUs write: every written page ends dirty";
const TestConfig test_config = {.cpus = 3};

namespace {

constexpr unsigned kPages = 700;   // three L1s
constexpr unsigned kRounds = 10;
constexpr unsigned rw = kProtRead | kProtWrite;
AddressSpace as;
std::atomic<unsigned> writers_done{0};
std::atomic<unsigned> probes{0}, probe_acks{0};
std::atomic<bool> probing_over{false};
std::atomic<unsigned> round_base{0};   // probes before this round (set while the writers are idle)
Cpu* writer_cpus[64];

Va region() { return as.base() + 20 * level_span(Level::L2) - 100 * kPageSize; }

// Clears D on every entry of the region (clear_entry_bits, per L1) and flushes
// every vCPU's TLB, so the round's writes walk and set D again.
void clean_region(Cpu& c)
{
    for (unsigned i = 0; i < kPages;) {
        PteRef r;
        if (!CHECK(as.pte_of(c, page(region(), i), r))) return;
        const unsigned n = kEntriesPerTable - r.index < kPages - i ? kEntriesPerTable - r.index : kPages - i;
        clear_entry_bits(c, r.table, r.index, n, pte::D);
        i += n;
    }
    FlushPlan all(0);
    all.add(region());
    CHECK_EQ(flush_tlb(c, all, as.vcpus()), 0);
}

// vCPU 0 is about to install what it read: every writer writes all its pages
// now. A writer that faults (it should not: every protection here is writable)
// would wait for vCPU 0's locks, so its fault ends the wait instead of an ack.
void probe(void*)
{
    const unsigned writers = rt::nr_vcpus() - 1;
    uint64_t faults0 = 0;
    for (unsigned w = 1; w <= writers; ++w) faults0 += writer_cpus[w]->stats.faults.get();
    const unsigned n = probes.fetch_add(1, std::memory_order_acq_rel) + 1;
    for (;;) {
        if (probe_acks.load(std::memory_order_acquire) == n * writers) return;
        uint64_t faults = 0;
        for (unsigned w = 1; w <= writers; ++w) faults += writer_cpus[w]->stats.faults.get();
        if (!CHECK_EQ(faults, faults0)) return;
        rt::this_cpu().hc.relax();
    }
}

// One round: every page is written once, at the first probe (later ones only
// acknowledge), so nothing after it can set a lost D bit again.
void probed_writer(Cpu& c)
{
    const unsigned writers = rt::nr_vcpus() - 1;
    bool wrote = false;
    for (unsigned seen = round_base.load(std::memory_order_acquire);;) {
        rt::wait_until(c, [&] { return probes.load(std::memory_order_acquire) != seen || probing_over.load(); });
        if (probes.load(std::memory_order_acquire) == seen) return;
        seen = probes.load(std::memory_order_acquire);
        for (unsigned i = c.id - 1; i < kPages && !wrote; i += writers) CHECK(c.mem.store(page(region(), i) + 8, i));
        wrote = true;
        probe_acks.fetch_add(1, std::memory_order_acq_rel);
    }
}

// Rounds of two NX flips (a raise, a reduction) with the probe before every
// mmu_update: pages not dirty at the end of the rounds.
uint64_t probed_rounds(Cpu& c)
{
    uint64_t lost = 0;
    ProbedCpu probed(c, __HYPERVISOR_mmu_update, true, probe, nullptr);
    probed.probing.armed = false;
    for (unsigned round = 0; round < kRounds; ++round) {
        clean_region(c);
        probing_over.store(false);
        round_base.store(probes.load());
        rt::on_all([&](Cpu& v) {
            if (v.id != 0) return probed_writer(v);
            probed.probing.armed = true;
            CHECK_EQ(as.mprotect(probed.cpu, region(), kPages * kPageSize, rw | kProtExec), 0);
            CHECK_EQ(as.mprotect(probed.cpu, region(), kPages * kPageSize, rw), 0);
            probed.probing.armed = false;
            probing_over.store(true, std::memory_order_release);
        });
        for (unsigned i = 0; i < kPages; ++i) lost += !(pte_at(c, as, page(region(), i)) & pte::D);
    }
    return lost;
}

// At least one full cycle of protections per round, and on until the writers
// are done.
unsigned mprotector(Cpu& c)
{
    const unsigned cycle[] = {rw | kProtExec, kProtRead, rw, kProtNone, rw, kProtRead | kProtExec};
    const unsigned writers = rt::nr_vcpus() - 1;
    unsigned n = 0;
    while (n < 6 || writers_done.load(std::memory_order_acquire) < writers) {
        CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, cycle[n % 6]), 0);
        ++n;
        c.hc.relax();   // lets the writers in between (2 host cores, 3 vCPUs)
    }
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, rw), 0);
    return n;
}

void writer(Cpu& c)
{
    const unsigned writers = rt::nr_vcpus() - 1;
    // Own pages, written once each; a refused write is retried on the next sweep.
    bool done[kPages] = {};
    for (unsigned left = (kPages - (c.id - 1) + writers - 1) / writers; left > 0;) {
        for (unsigned i = c.id - 1; i < kPages; i += writers) {
            if (done[i] || !c.mem.store(page(region(), i) + 8, i)) continue;
            done[i] = true;
            --left;
        }
        c.hc.relax();
    }
    writers_done.fetch_add(1, std::memory_order_acq_rel);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, region(), kPages * kPageSize, rw), 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK(c.mem.store(page(region(), i), i));

    rt::on_all([](Cpu& v) { writer_cpus[v.id] = &v; });
    const uint64_t probed_lost = probed_rounds(c);
    rt::print("probed: %u rounds, %u probes, %llu of %u written pages not dirty", kRounds, probes.load(),
              (unsigned long long)probed_lost, kRounds * kPages);
    CHECK_EQ(probes.load(), 2 * 3 * kRounds);   // 2 mprotects a round, 3 L1s each
    CHECK_EQ(probed_lost, 0);

    uint64_t lost = 0, changes = 0;
    for (unsigned round = 0; round < kRounds; ++round) {
        clean_region(c);
        writers_done.store(0, std::memory_order_release);
        rt::on_all([&](Cpu& v) {
            if (v.id == 0) changes += mprotector(v);
            else writer(v);
        });
        for (unsigned i = 0; i < kPages; ++i) lost += !(pte_at(c, as, page(region(), i)) & pte::D);
    }
    rt::print("free: %u rounds, %llu mprotect calls during the writes, %llu of %u written pages not dirty", kRounds,
              (unsigned long long)changes, (unsigned long long)lost, kRounds * kPages);
    CHECK(changes > 0);
    CHECK_EQ(lost, 0);
    for (unsigned i = 0; i < kPages; ++i) CHECK_EQ(load_or(c, page(region(), i)), i);
}
