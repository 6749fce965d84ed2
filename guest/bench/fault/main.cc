// fault: lmbench's lat_pagefault and lat_mmap as a guest program
// (seed 004; the host half is perf/bench_fault.py, `./pvmmu bench fault`).
//
// Each run builds an address space, maps `pages` pages of anonymous memory,
// touches every page once (a demand-zero fault each: the guest's handler takes
// a frame, zeroes it and installs the entry with one mmu_update), and tears the
// space down again. Reported: time per fault (the touch loop over the number
// of faults), time per map (the whole cycle: create, map, touch, destroy), and
// every TLB flush operation the library issued, split into the fixes of
// spurious faults and the rest. A new mapping is never flushed preventively
// (seed 004: lat_pagefault's 665k flushes became 832), so while pages are
// touched the rest must be 0; where the TLB caches failed walks
// (--tlb-caches-invalid on the sim) each new page faults once more and that
// fault is fixed with one local INVLPG.
// Arguments: pages=N (default 1024), runs=R (default 5). One line per run:
//   bench run=R pages=N faults=… spurious=… fault_ns=… map_ns=…
//         fix_flushes=… preventive_flushes=… teardown_flushes=…
#include "guest/address_space.h"
#include "guest/test.h"

using namespace pvmmu::guest;

const char test_title[] = "page fault and map latency, TLB flushes per new mapping";
const TestConfig test_config = {.cpus = 1, .frames = 8192};

namespace {

uint64_t flush_ops(Cpu& c) { return c.stats.flush_local.get() + c.stats.flush_remote.get(); }

// Flushes that fixed a spurious fault (page_fault.cc: write faults always, read
// faults only where the TLB caches failed walks).
uint64_t fixes(Cpu& c)
{
    return c.stats.spurious_write.get() + (c.guest->boot().tlb_caches_invalid ? c.stats.spurious_read.get() : 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    const unsigned pages = unsigned(rt::arg_u64("pages", 1024));
    const unsigned runs = unsigned(rt::arg_u64("runs", 5));
    if (pages == 0 || pages > 4096) return rt::error("pages must be 1..4096");
    for (unsigned run = 0; run < runs; ++run) {
        AddressSpace as;
        const uint64_t t0 = rt::now_ns();
        if (int rc = as.create(c, 2)) return rt::error("create: %d", rc);
        as.enter(c);
        const Va r = as.base() + level_span(Level::L2);
        if (int rc = as.map_anon(c, r, uint64_t(pages) * kPageSize, kProtRead | kProtWrite))
            return rt::error("map_anon: %d", rc);
        const uint64_t f0 = c.stats.faults.get(), s0 = c.stats.spurious.get(), fl0 = flush_ops(c), fx0 = fixes(c);
        const uint64_t t1 = rt::now_ns();
        for (unsigned p = 0; p < pages; ++p)
            if (!c.mem.store(r + uint64_t(p) * kPageSize, p)) return rt::error("touch %u", p);
        const uint64_t t2 = rt::now_ns();
        const uint64_t faults = c.stats.faults.get() - f0, fix = fixes(c) - fx0;
        const uint64_t flushes = flush_ops(c) - fl0, fl1 = flush_ops(c);
        if (int rc = as.destroy(c)) return rt::error("destroy: %d", rc);
        const uint64_t t3 = rt::now_ns();
        rt::print("bench run=%u pages=%u faults=%llu spurious=%llu fault_ns=%llu map_ns=%llu fix_flushes=%llu "
                  "preventive_flushes=%llu teardown_flushes=%llu",
                  run, pages, (unsigned long long)faults, (unsigned long long)(c.stats.spurious.get() - s0),
                  (unsigned long long)(faults ? (t2 - t1) / faults : 0), (unsigned long long)(t3 - t0),
                  (unsigned long long)fix, (unsigned long long)(flushes - fix),
                  (unsigned long long)(flush_ops(c) - fl1));
    }
}
