// tlb-miss: seed 000's "wicked" test as a guest program (the host
// half is perf/bench_tlb_miss.py, `./pvmmu bench tlb-miss`). Every vCPU stores
// one word per page across far more pages than a TLB holds, so every access
// misses and walks the page tables; the cost of a TLB miss is then what the
// walk costs, plus whatever protects the walk against page tables being freed
// under it.
//
// pvmmu protects walks by deferring reuse, not by locking: a table's frame can
// take another type only after every CPU that may still walk it has flushed
// (docs/architecture.md §3, the TLB clock), so nothing at all runs on the walk
// path — pvmmu's protected walk and the unprotected walk are the same walk.
// For comparison the program also runs the seed's scheme: a lock shared by
// all vCPUs taken (read side: one atomic increment and decrement of one cache
// line) around every access that misses.
//
// Variants, each `runs` times, interleaved: hits (the same loop over fewer
// pages than the TLB holds), walk (pvmmu), walk+lock (seed 000's lock).
// Arguments: pages=N per vCPU (default 4096), rounds=R passes (default 8),
// runs=R (default 5). One line per (variant, run):
//   bench variant=V vcpus=N run=R accesses=… ns=… tlb_misses=…
// where tlb_misses is `-` on a platform that cannot count them (bare metal:
// the hardware walks, or under TCG QEMU's software TLB refills, unseen).
#include <atomic>
#include <stdio.h>

#include "guest/address_space.h"
#include "guest/test.h"

using namespace pvmmu::guest;

const char test_title[] = "TLB miss cost: pvmmu's lock-free walk against seed 000's locked walk";
const TestConfig test_config = {.cpus = 1, .frames = 20480};

namespace {

constexpr unsigned kMaxVcpus = 4;
constexpr unsigned kHitPages = 16;   // well inside any TLB (the sim's holds 64)

enum Variant : unsigned { kHits, kWalk, kWalkLock, kVariants };
const char* const kNames[kVariants] = {"hits", "walk", "walk+lock"};

AddressSpace as;
unsigned pages = 4096, rounds = 8, runs = 5;
Va region[kMaxVcpus];
std::atomic<uint64_t> walk_lock{0};   // the seed's lock: readers in a shared word
std::atomic<uint64_t> accessed{0};    // stores made in the current measurement, all vCPUs
rt::Barrier* barrier;
uint64_t start_ns, elapsed_ns;

// rounds passes over n pages, one store per page; the stores made.
uint64_t touch(Cpu& c, unsigned n, bool lock)
{
    uint64_t made = 0;
    for (unsigned r = 0; r < rounds; ++r)
        for (unsigned p = 0; p < n; ++p, ++made) {
            if (lock) walk_lock.fetch_add(1, std::memory_order_acquire);
            const bool ok = c.mem.store(region[c.id] + uint64_t(p) * kPageSize, r);
            if (lock) walk_lock.fetch_sub(1, std::memory_order_release);
            if (!ok) {
                rt::error("store to page %u failed", p);
                return made;
            }
        }
    return made;
}

Variant current;

void measure(Cpu& c)
{
    barrier->wait(c);
    if (c.id == 0) start_ns = rt::now_ns();
    const unsigned n = current == kHits ? kHitPages : pages;
    // The same number of accesses in every variant.
    uint64_t made = 0;
    for (unsigned k = 0; k < (current == kHits ? pages / kHitPages : 1); ++k) made += touch(c, n, current == kWalkLock);
    barrier->wait(c);
    accessed.fetch_add(made, std::memory_order_relaxed);
    if (c.id == 0) elapsed_ns = rt::now_ns() - start_ns;
}

// All vCPUs' TLB misses so far; false if the platform does not count them.
bool misses(uint64_t& sum)
{
    sum = 0;
    for (unsigned v = 0; v < rt::nr_vcpus(); ++v) {
        rt::PlatformCounters pc;
        if (!rt::platform_counters(v, pc) || !pc.tlb_misses_counted) return false;
        sum += pc.tlb_misses;
    }
    return true;
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    const unsigned V = rt::nr_vcpus();
    pages = unsigned(rt::arg_u64("pages", pages));
    rounds = unsigned(rt::arg_u64("rounds", rounds));
    runs = unsigned(rt::arg_u64("runs", runs));
    if (V > kMaxVcpus || pages < kHitPages || pages % kHitPages || rounds == 0)
        return rt::error("bad arguments: at most %u vCPUs, pages a multiple of %u, rounds > 0", kMaxVcpus, kHitPages);
    if (int rc = as.create(c, 2)) return rt::error("create: %d", rc);
    // Every page is touched before the runs: the domain's memory (TestConfig
    // frames on the sim, the xl.cfg `memory` on bare metal) must hold them
    // all, with their L1 tables and a few upper ones.
    const uint64_t need = uint64_t(V) * (pages + pages / kEntriesPerTable + 1) + 4;
    if (need > c.guest->frames().nr_free())
        return rt::error("pages x vCPUs = %u x %u needs about %llu frames; the domain has %llu free", pages, V,
                         (unsigned long long)need, (unsigned long long)c.guest->frames().nr_free());
    for (unsigned v = 0; v < V; ++v) {
        region[v] = as.base() + level_span(Level::L2) * (1 + v * (pages / kEntriesPerTable + 2));
        if (int rc = as.map_anon(c, region[v], uint64_t(pages) * kPageSize, kProtRead | kProtWrite))
            return rt::error("map_anon: %d", rc);
    }
    rt::Barrier b(V);
    barrier = &b;
    rt::on_all([](Cpu& v) {
        as.enter(v);
        for (unsigned p = 0; p < pages; ++p)   // demand-zero every page first
            if (!v.mem.store(region[v.id] + uint64_t(p) * kPageSize, p)) return rt::error("touch %u", p);
    });
    if (rt::failed()) return;
    for (unsigned run = 0; run < runs; ++run)
        for (unsigned var = 0; var < kVariants; ++var) {
            current = Variant(var);
            uint64_t m0, m1;
            const bool counted = misses(m0);
            accessed.store(0, std::memory_order_relaxed);
            rt::on_all([](Cpu& v) { measure(v); });
            char missed[24] = "-";
            if (counted && misses(m1)) snprintf(missed, sizeof(missed), "%llu", (unsigned long long)(m1 - m0));
            rt::print("bench variant=%s vcpus=%u run=%u accesses=%llu ns=%llu tlb_misses=%s", kNames[var], V, run,
                      (unsigned long long)accessed.load(std::memory_order_relaxed), (unsigned long long)elapsed_ns,
                      missed);
        }
}
