// shootdown-contention: every vCPU flushes the whole domain's TLBs at once,
// over and over, so that several senders queue for one target's mailbox while
// that target is a sender itself (hypervisor/arch/x86_64/cpu/shootdown.cc):
// each flush returns 0, every vCPU finishes its share, and where the platform
// counts them every vCPU served some of the others' flushes.
// Run by CTest under QEMU's -icount as well (qemu4i.shootdown-contention):
// there the vCPUs take turns on one host thread, and a CPU that waits for
// another without PAUSE can keep it from ever running (docs/results.md §13).
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "every vCPU flushes every other at once: each flush returns and is served";
const TestConfig test_config = {.cpus = 4};

namespace {

constexpr unsigned kFlushes = 50;   // per vCPU
std::atomic<unsigned> failed{0}, finished{0};

uint64_t served(unsigned vcpu)
{
    rt::PlatformCounters pc;
    return rt::platform_counters(vcpu, pc) ? pc.shootdowns_served : 0;
}

} // namespace

void test_main()
{
    const unsigned n = rt::nr_vcpus();
    if (n < 2) return rt::skip("needs 2 vCPUs");
    rt::PlatformCounters pc;
    const bool platform = rt::platform_counters(0, pc);
    uint64_t before[64] = {};
    for (unsigned i = 0; i < n && i < 64; ++i) before[i] = served(i);
    rt::Barrier start(n);
    rt::on_all([&](Cpu& v) {
        start.wait(v);
        for (unsigned k = 0; k < kFlushes; ++k)
            if (mmuext_one(v, MMUEXT_TLB_FLUSH_ALL, 0) != 0) failed.fetch_add(1, std::memory_order_relaxed);
        finished.fetch_add(1, std::memory_order_relaxed);
    });
    CHECK_EQ(failed.load(), 0u);
    CHECK_EQ(finished.load(), n);
    if (platform)
        for (unsigned i = 0; i < n && i < 64; ++i)
            if (served(i) == before[i]) rt::fail("vCPU %u served no flush of the others'", i);
}
