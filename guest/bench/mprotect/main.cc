// mprotect: the guest half of docs/design.md §7's mprotect scaling benchmark;
// the host half is perf/bench_mprotect.py (`./pvmmu bench mprotect`), which runs
// this program once per (workload, vCPU count) and reads its console lines.
//
// Workloads: private (each vCPU mprotects its own region RW -> RO -> RW and then
// writes to it: the database pattern of seed 003) and shared (vCPU 0 mprotects
// one region while the others keep writing to it). Every mode (modes.h) is
// measured in the same domain, interleaved run by run, so `native` is measured
// next to the others.
//
// A/D accounting, exact and platform-independent: a writer writes each page at
// most once per epoch and remembers which pages it wrote; at the end of the
// epoch (all vCPUs stopped) every written page must be Accessed and Dirty in
// its PTE, which is then cleaned (A/D cleared, TLBs flushed) for the next epoch.
// The updates never clear A/D on purpose (per-pte's get_and_clear hands them
// back and its set re-installs them), so a written page without them lost a
// bit; writing once per epoch makes sure no later write hides the loss.
//
// Arguments (KEY=VALUE): modes=LIST (default all), workload=private|shared,
// pages=N per region, runs=R, epochs=E per run, cycles=K per epoch,
// burst=B pages a private vCPU writes per cycle (default pages / cycles),
// batch=N requests per mmu_update of the atomic-array mode (default 512: a
// whole L1; smaller ones split a hypervisor's per-call from its per-entry cost).
// One line per (mode, run):
//   bench mode=M workload=W vcpus=V run=R pages=N mprotects=… ptes=… ns=…
//         update_calls=… (mmu_update hypercalls, direct or wrapped)
//         multicalls=… (the multicalls among them) flush_local=… flush_remote=… spurious=… retries=…|na
//         (retries: the guest's own cmpxchg loop for native, the hypervisor's
//         install loops for the rest; na where the platform cannot tell)
//         ad_checked=… ad_lost=…
#include "guest/address_space.h"
#include "guest/mmu_batch.h"
#include "guest/pte_ops.h"
#include "guest/test.h"
#include "guest/tlb.h"
#include "modes.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::bench;

const char test_title[] = "mprotect scaling benchmark (docs/design.md §7): update modes x workload";
const TestConfig test_config = {.cpus = 2, .frames = 20480};

namespace {

constexpr unsigned kMaxVcpus = 16;
constexpr unsigned kMaxPages = 16384;   // all regions together
constexpr unsigned kSlot = 2;            // the address space's L4 slot

struct Params {
    bool shared = false;
    unsigned pages = 1024, runs = 3, epochs = 4, cycles = 4, burst = 0, batch = 0;
};

// What one vCPU counted in the timed part of a phase.
struct Tally {
    uint64_t mprotects, update_calls, multicalls, flush_local, flush_remote, spurious;
};

Params P;
unsigned V;
AddressSpace as;
Va region[kMaxVcpus];           // private: one per vCPU; shared: region[0]
uint8_t written[kMaxPages];     // written since the last harvest (one writer per page)
Tally tally[kMaxVcpus];
rt::Barrier* barrier;
std::atomic<bool> go{false}, stop{false}, broken{false};
uint64_t epoch_start, timed_ns;

unsigned nr_pages() { return P.shared ? P.pages : V * P.pages; }
Va page_va(unsigned g) { return region[g / P.pages] + uint64_t(g % P.pages) * kPageSize; }

void broke(const char* what, int rc)
{
    if (!broken.exchange(true)) rt::error("%s: %d", what, rc);
}

// Writes page g at most once per epoch (a second write could set a bit again
// that an update lost, and hide the loss from the harvest).
bool write_once(Cpu& c, unsigned g)
{
    if (written[g]) return true;
    if (!c.mem.store(page_va(g), g)) return false;   // read-only just now
    written[g] = 1;
    return true;
}

// One mprotect of a whole region, with what it cost this vCPU.
void counted_mprotect(Cpu& c, Va start, unsigned prot)
{
    Tally& t = tally[c.id];
    CpuStats& s = c.stats;
    const uint64_t calls = s.mmu_update_calls.get(), mc = s.multicalls.get();
    const uint64_t fl = s.flush_local.get(), fr = s.flush_remote.get();
    if (int rc = as.mprotect(c, start, uint64_t(P.pages) * kPageSize, prot)) broke("mprotect", rc);
    t.update_calls += s.mmu_update_calls.get() - calls;
    t.multicalls += s.multicalls.get() - mc;
    t.flush_local += s.flush_local.get() - fl;
    t.flush_remote += s.flush_remote.get() - fr;
    ++t.mprotects;
}

void cycle(Cpu& c, Va start)
{
    counted_mprotect(c, start, kProtRead);
    counted_mprotect(c, start, kProtRead | kProtWrite);
}

// Starts with vCPU 0's first mprotect, not before: a writer let loose first
// would write every page before the first entry is read, and no update could
// then race with a write.
void shared_writer(Cpu& c)
{
    rt::wait_until(c, [] { return go.load(std::memory_order_acquire); });
    while (!stop.load(std::memory_order_acquire)) {
        bool all = true;
        for (unsigned g = c.id - 1; g < P.pages && !stop.load(std::memory_order_relaxed); g += V - 1)
            all &= write_once(c, g);
        if (all) c.hc.relax();   // nothing left to write this epoch
    }
}

// The timed part: vCPU 0 measures from the first barrier to the second.
void epoch(Cpu& c)
{
    const uint64_t spurious = c.stats.spurious.get();
    barrier->wait(c);
    if (c.id == 0) epoch_start = rt::now_ns();
    if (!P.shared) {
        unsigned next = 0;
        for (unsigned k = 0; k < P.cycles && !broken.load(); ++k) {
            cycle(c, region[c.id]);
            for (unsigned w = 0; w < P.burst && next < P.pages; ++w) (void)write_once(c, c.id * P.pages + next++);
        }
    } else if (c.id == 0) {
        go.store(true, std::memory_order_release);
        for (unsigned k = 0; k < P.cycles && !broken.load(); ++k) cycle(c, region[0]);
        stop.store(true, std::memory_order_release);
    } else {
        shared_writer(c);
    }
    barrier->wait(c);
    if (c.id == 0) timed_ns += rt::now_ns() - epoch_start;
    tally[c.id].spurious += c.stats.spurious.get() - spurious;
}

struct AdCount {
    uint64_t checked = 0, lost = 0;
};

// vCPU 0, the others idle: checks every written page's A and D, then clears
// A/D everywhere (cmd 0: nothing else runs) and flushes every vCPU, so the next
// epoch's writes set them afresh.
int harvest(Cpu& c, AdCount& ad)
{
    // A run of pages in one region and one L1 at a time: a region of fewer
    // than 512 pages is followed by unmapped entries up to the next region.
    for (unsigned g0 = 0, n = 0; g0 < nr_pages(); g0 += n) {
        const unsigned in_region = P.pages - g0 % P.pages;
        const unsigned in_l1 = kEntriesPerTable - unsigned((page_va(g0).v >> kPageShift) % kEntriesPerTable);
        n = in_region < in_l1 ? in_region : in_l1;
        PteRef ref;
        if (!as.pte_of(c, page_va(g0), ref)) return -XEN_EFAULT;
        SpinGuard lock(c, c.guest->pte_lock(ref.table));
        MmuBatch b(c, ref.table, kEntriesPerTable);
        for (unsigned i = 0; i < n; ++i) {
            const PteRef r{ref.table, ref.index + i};
            uint64_t e;
            if (!pte_read(c, r, e)) return -XEN_EFAULT;
            if (written[g0 + i]) {
                ad.checked += 2;
                ad.lost += !(e & pte::A) + !(e & pte::D);
                written[g0 + i] = 0;
            }
            if (e & pte::AD)
                if (int rc = b.add(MMU_NORMAL_PT_UPDATE, r.index, e & ~pte::AD)) return rc;
        }
        if (int rc = b.flush()) return rc;
    }
    FlushPlan all(0);
    all.add(as.base());
    return flush_tlb(c, all, as.vcpus());
}

// v in decimal into out (at least 21 bytes), for a field that may also be "na".
void decimal(char* out, uint64_t v)
{
    char tmp[20];
    unsigned n = 0;
    do tmp[n++] = char('0' + v % 10);
    while ((v /= 10) != 0);
    for (unsigned i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
    out[n] = '\0';
}

// One (mode, run): `epochs` timed epochs, each followed by a harvest.
void phase(Cpu& c, const Mode& m, unsigned run)
{
    use_mode(*c.guest, m);
    if (P.batch && m.cap == MmuLevel::Atomic && !m.multicall && !m.hook) c.guest->config.batch_ptes = P.batch;
    for (Tally& t : tally) t = Tally{};
    // The guest's own cmpxchg retries (native) and the hypervisor's (the rest).
    uint64_t retries = 0, hv_retries = 0;
    const bool hv_known = rt::hypervisor_install_retries(hv_retries);
    retries -= hv_retries;
    for (unsigned v = 0; v < V; ++v) retries -= native_retries(v);
    timed_ns = 0;
    AdCount ad;
    for (unsigned e = 0; e < P.epochs && !broken.load(); ++e) {
        go.store(false);
        stop.store(false);
        rt::on_all([](Cpu& v) { epoch(v); });
        if (int rc = harvest(c, ad)) broke("harvest", rc);
    }
    Tally sum{};
    for (unsigned v = 0; v < V; ++v) {
        sum.mprotects += tally[v].mprotects, sum.update_calls += tally[v].update_calls;
        sum.multicalls += tally[v].multicalls;
        sum.flush_local += tally[v].flush_local, sum.flush_remote += tally[v].flush_remote;
        sum.spurious += tally[v].spurious;
        retries += native_retries(v);
    }
    if (rt::hypervisor_install_retries(hv_retries)) retries += hv_retries;
    char rbuf[24] = "na";   // where the hypervisor's retries are not visible to the guest
    if (m.counts_retries || hv_known) decimal(rbuf, retries);
    rt::print("bench mode=%s workload=%s vcpus=%u run=%u pages=%u mprotects=%llu ptes=%llu ns=%llu "
              "update_calls=%llu multicalls=%llu flush_local=%llu flush_remote=%llu spurious=%llu retries=%s "
              "ad_checked=%llu ad_lost=%llu",
              m.name, P.shared ? "shared" : "private", V, run, P.pages, (unsigned long long)sum.mprotects,
              (unsigned long long)(sum.mprotects * P.pages), (unsigned long long)timed_ns,
              (unsigned long long)sum.update_calls, (unsigned long long)sum.multicalls,
              (unsigned long long)sum.flush_local,
              (unsigned long long)sum.flush_remote, (unsigned long long)sum.spurious, rbuf,
              (unsigned long long)ad.checked, (unsigned long long)ad.lost);
}

bool same(const char* a, const char* b)
{
    while (*a && *a == *b) ++a, ++b;
    return *a == *b;
}

bool parse(const Mode** modes, unsigned& nr)
{
    if (const char* w = rt::arg("workload")) {
        P.shared = same(w, "shared");
        if (!P.shared && !same(w, "private")) return false;
    }
    P.pages = unsigned(rt::arg_u64("pages", P.pages));
    P.runs = unsigned(rt::arg_u64("runs", P.runs));
    P.epochs = unsigned(rt::arg_u64("epochs", P.epochs));
    P.cycles = unsigned(rt::arg_u64("cycles", P.cycles));
    if (P.pages == 0 || P.cycles == 0 || nr_pages() > kMaxPages) return false;
    P.burst = unsigned(rt::arg_u64("burst", (P.pages + P.cycles - 1) / P.cycles));
    P.batch = unsigned(rt::arg_u64("batch", 0));
    if (P.batch > kEntriesPerTable) return false;
    nr = 0;
    const char* list = rt::arg("modes");
    if (!list) {
        for (unsigned i = 0; i < nr_modes(); ++i) modes[nr++] = &mode_at(i);
        return true;
    }
    for (const char* p = list; *p;) {
        unsigned len = 0;
        while (p[len] && p[len] != ',') ++len;
        const Mode* m = find_mode(p, len);
        if (!m || nr == nr_modes()) return false;
        modes[nr++] = m;
        p += len + (p[len] == ',');
    }
    return nr > 0;
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    V = rt::nr_vcpus();
    const Mode* modes[16];
    unsigned nr = 0;
    if (V > kMaxVcpus) return rt::error("at most %u vCPUs", kMaxVcpus);
    if (!parse(modes, nr)) return rt::error("bad arguments (see guest/bench/mprotect/main.cc)");
    if (int rc = as.create(c, kSlot)) return rt::error("create: %d", rc);
    // Regions one L1 apart at least, each starting on an L1 boundary.
    const uint64_t stride = align_up(uint64_t(P.pages) * kPageSize, level_span(Level::L2)) + level_span(Level::L2);
    for (unsigned r = 0; r < (P.shared ? 1 : V); ++r) {
        region[r] = as.base() + level_span(Level::L2) + r * stride;
        if (int rc = as.map_anon(c, region[r], uint64_t(P.pages) * kPageSize, kProtRead | kProtWrite))
            return rt::error("map_anon: %d", rc);
    }
    for (unsigned g = 0; g < nr_pages(); ++g)   // every page present before the first run
        if (!c.mem.store(page_va(g), g)) return rt::error("touch page %u", g);
    rt::on_all([](Cpu& v) { as.enter(v); });
    rt::Barrier b(V);
    barrier = &b;
    AdCount ignored;
    if (int rc = harvest(c, ignored)) return rt::error("harvest: %d", rc);
    for (unsigned run = 0; run < P.runs && !broken.load(); ++run)
        for (unsigned i = 0; i < nr; ++i) phase(c, *modes[i], run);
}
