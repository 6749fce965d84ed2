// batch-size: the guest benchmark behind MmuConfig's default batch size
// (docs/guest.md, "Batch size"). mprotect RW <-> RO of 8 full L1s (4096 PTEs)
// at each feature level and batch size; prints the median and minimum cost per
// PTE of 15 runs of 10 round trips. A guest program like the tests (same
// runtime, same console convention), but no test: its numbers are measured,
// never asserted. Run: build/guest/bench/batch-size/guest-batch-size
#include <algorithm>
#include <chrono>

#include "guest/address_space.h"
#include "guest/test.h"

using namespace pvmmu::guest;

const char test_title[] = "mprotect cost per PTE by feature level and batch size";
const TestConfig test_config = {.cpus = 1, .frames = 8192};

namespace {

constexpr unsigned kPtes = 8 * kEntriesPerTable;
constexpr unsigned kRuns = 15, kTrips = 10;
AddressSpace as;

struct Cost {
    double median, min;
};

Cost ns_per_pte(Cpu& c, Va r)
{
    double t[kRuns];
    for (double& x : t) {
        const auto t0 = std::chrono::steady_clock::now();
        for (unsigned k = 0; k < kTrips; ++k) {
            if (as.mprotect(c, r, kPtes * kPageSize, kProtRead) ||
                as.mprotect(c, r, kPtes * kPageSize, kProtRead | kProtWrite))
                rt::error("mprotect failed");
        }
        x = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
            (2.0 * kTrips * kPtes);
    }
    std::sort(t, t + kRuns);
    return Cost{t[kRuns / 2], t[0]};
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (int rc = as.create(c, 2)) return rt::error("create: %d", rc);
    as.enter(c);
    const Va r = as.base() + 32 * level_span(Level::L2);
    if (as.map_anon(c, r, kPtes * kPageSize, kProtRead | kProtWrite)) return rt::error("map_anon");
    for (unsigned i = 0; i < kPtes; ++i)
        if (!c.mem.store(r + uint64_t(i) * kPageSize, i)) return rt::error("touch");

    const struct {
        const char* name;
        uint32_t deny;
    } levels[] = {{"FlagRange", 0}, {"Atomic", deny::kFlagRange}, {"Normal", deny::kMmuAtomic}};
    for (const auto& l : levels) {
        if (l.deny && (!rt::deny(l.deny) || c.guest->detect_features(c))) return rt::error("cannot deny");
        for (unsigned b : {8u, 16u, 31u, 64u, 128u, 256u, 512u}) {
            // FlagRange sends one request per L1 whatever the batch size.
            if (c.guest->level() == MmuLevel::FlagRange && b != kEntriesPerTable) continue;
            c.guest->config.batch_ptes = b;
            const Cost m = ns_per_pte(c, r);
            rt::print("%-9s batch %3u PTEs/call: median %6.1f ns/PTE, min %6.1f", l.name, b, m.median, m.min);
        }
    }
}
