// tlb-shootdown: after RW -> RO on vCPU 0, a write on vCPU 1 faults — no stale
// writable TLB entry survives an mprotect that takes write access away. Both
// flush forms are covered: a few pages (INVLPG on each, up to the threshold)
// and many (the whole TLB). Only vCPUs that entered the address space are
// flushed: vCPU 2 never entered and is never interrupted; vCPU 1, once it has
// left, is not either. Raises send no flush at all.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "after RW->RO on vCPU 0 a write on vCPU 1 faults: no stale writable entry survives";
const TestConfig test_config = {.cpus = 3};

namespace {

constexpr unsigned kPages = 64;
constexpr unsigned kFew = 8;   // below the flush threshold
AddressSpace as;

Va region() { return as.base() + 18 * level_span(Level::L2); }

uint64_t served(unsigned vcpu)
{
    rt::PlatformCounters pc;
    return rt::platform_counters(vcpu, pc) ? pc.shootdowns_served : 0;
}

// Writes on vCPU 1 to pages [0, kPages): how many succeeded.
unsigned writes_on_1()
{
    unsigned ok = 0;
    rt::on_all([&](Cpu& v) {
        if (v.id != 1) return;
        for (unsigned i = 0; i < kPages; ++i) ok += can_write(v, page(region(), i) + 8, i);
    });
    return ok;
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    rt::PlatformCounters pc;
    const bool platform = rt::platform_counters(0, pc);
    CHECK_EQ(as.create(c, kSlot), 0);
    rt::on_all([&](Cpu& v) {
        if (v.id < 2) as.enter(v);   // vCPU 2 stays out
    });
    CHECK_EQ(as.map_anon(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    CHECK_EQ(writes_on_1(), kPages);   // vCPU 1 now caches writable, dirty entries
    const unsigned threshold = c.guest->config.flush_threshold;
    CHECK(kFew <= threshold && kPages > threshold);

    // A few pages: one INVLPG each, on vCPUs 0 and 1 only.
    uint64_t s1 = served(1), s2 = served(2);
    Snap a = snap(c);
    CHECK_EQ(as.mprotect(c, region(), kFew * kPageSize, kProtRead), 0);
    Snap b = snap(c);
    CHECK_EQ(b.flush_remote - a.flush_remote, 1);
    CHECK_EQ(b.invlpg_pages - a.invlpg_pages, kFew);
    if (platform) {
        CHECK_EQ(served(1) - s1, kFew);
        CHECK_EQ(served(2) - s2, 0);
    }
    CHECK_EQ(writes_on_1(), kPages - kFew);

    // Many pages: one whole flush.
    s1 = served(1), s2 = served(2);
    a = snap(c);
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead), 0);
    b = snap(c);
    CHECK_EQ(b.flush_remote - a.flush_remote, 1);
    CHECK_EQ(b.invlpg_pages - a.invlpg_pages, 0);
    if (platform) {
        CHECK_EQ(served(1) - s1, 1);
        CHECK_EQ(served(2) - s2, 0);
    }
    CHECK_EQ(writes_on_1(), 0);

    // A raise: no flush anywhere; vCPU 1's stale entries are fixed as they fault.
    s1 = served(1);
    a = snap(c);
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    b = snap(c);
    CHECK_EQ(b.flush_remote - a.flush_remote + b.flush_local - a.flush_local, 0);
    CHECK_EQ(writes_on_1(), kPages);
    if (platform) CHECK_EQ(served(1) - s1, 0);

    // vCPU 1 leaves: reductions no longer reach it, and it holds nothing stale.
    rt::on_all([&](Cpu& v) {
        if (v.id == 1) CHECK_EQ(as.leave(v), 0);
    });
    s1 = served(1);
    a = snap(c);
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead), 0);
    b = snap(c);
    CHECK_EQ(b.flush_local - a.flush_local, 1);   // vCPU 0 alone
    CHECK_EQ(b.flush_remote - a.flush_remote, 0);
    if (platform) CHECK_EQ(served(1) - s1, 0);
}
