// The per-vCPU call counts of core/call_counters.h (PVMMUOP_vcpu_calls,
// docs/abi.md §10 "pvmmu_op"): an mmu_update call is counted where it is made
// (core/mmu_update_count.h: a multicall's entry here, the platform's
// hypercall entry on bare metal), once, with every request it handed in,
// however many rounds it takes or however it ends; a multicall counts each
// entry it ran; only the calling vCPU's counts move.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class CallCountersTest : public CoreTest {
protected:
    CallCountersTest() : CoreTest(HvConfig{.preempt_budget = 8}) {}
    mmu_update_t nx(uint64_t g) const { return req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | NX)); }
    static uint64_t get(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }
    static multicall_entry_t update(const std::vector<mmu_update_t>& reqs)
    {
        multicall_entry_t e{};
        e.op = __HYPERVISOR_mmu_update;
        e.args[0] = uint64_t(reqs.data()), e.args[1] = reqs.size(), e.args[3] = DOMID_SELF;
        return e;
    }
    long multicall(std::vector<multicall_entry_t>& list, Vcpu& v, unsigned* continuations = nullptr)
    {
        return m.call(v, __HYPERVISOR_multicall, uint64_t(list.data()), list.size(), 0, 0, 0, continuations);
    }
};

TEST_F(CallCountersTest, ADirectCallIsThePlatformsToCount)
{
    unsigned done = 0;
    ASSERT_EQ(mmu_update({nx(600), nx(601)}, &done), 0);
    EXPECT_EQ(get(v0().calls.mmu_updates), 0u);
    EXPECT_EQ(get(v0().calls.mmu_update_requests), 0u);
    EXPECT_EQ(get(v0().calls.hypercalls), 0u);
}

TEST_F(CallCountersTest, OneMmuUpdateCountsOnceWithItsRequestsAcrossContinuations)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 620; ++g) reqs.push_back(nx(g));
    std::vector<multicall_entry_t> list{update(reqs)};
    unsigned continuations = 0;
    ASSERT_EQ(multicall(list, v0(), &continuations), 0);
    ASSERT_EQ(long(list[0].result), 0);
    ASSERT_GT(continuations, 0u);   // the budget of 8 split the entry into rounds
    EXPECT_EQ(get(v0().calls.mmu_updates), 1u);
    EXPECT_EQ(get(v0().calls.mmu_update_requests), 20u);
    EXPECT_EQ(get(v0().calls.multicall_entries), 1u);
}

TEST_F(CallCountersTest, AFailedBatchCountsWhatItHandedIn)
{
    std::vector<mmu_update_t> reqs{nx(600), mmu_update_t{ptr(l1_of(601), idx(601), 7), 0}, nx(602)};
    std::vector<multicall_entry_t> list{update(reqs)};
    ASSERT_EQ(multicall(list, v0()), 0);
    EXPECT_EQ(long(list[0].result), -XEN_ENOSYS);
    EXPECT_EQ(get(v0().calls.mmu_updates), 1u);
    EXPECT_EQ(get(v0().calls.mmu_update_requests), 3u);
}

TEST_F(CallCountersTest, MulticallCountsEachEntryAndEachInnerMmuUpdate)
{
    std::vector<mmu_update_t> a{nx(600), nx(601), nx(602)}, b{nx(603)};
    std::vector<multicall_entry_t> list{update(a), multicall_entry_t{}, update(b)};
    list[1].op = __HYPERVISOR_xen_version;
    ASSERT_EQ(multicall(list, v0()), 0);
    EXPECT_EQ(long(list[0].result), 0);
    EXPECT_EQ(long(list[2].result), 0);
    EXPECT_EQ(get(v0().calls.multicall_entries), 3u);
    EXPECT_EQ(get(v0().calls.mmu_updates), 2u);
    EXPECT_EQ(get(v0().calls.mmu_update_requests), 4u);
    // The top-level counts are the platform's (its hypercall entry).
    EXPECT_EQ(get(v0().calls.hypercalls), 0u);
    EXPECT_EQ(get(v0().calls.multicalls), 0u);
}

TEST_F(CallCountersTest, OnlyTheCallingVcpuCounts)
{
    std::vector<mmu_update_t> reqs{nx(600), nx(601)};
    std::vector<multicall_entry_t> list{update(reqs)};
    ASSERT_EQ(multicall(list, v1()), 0);
    EXPECT_EQ(get(v1().calls.mmu_update_requests), 2u);
    EXPECT_EQ(get(v1().calls.multicall_entries), 1u);
    EXPECT_EQ(get(v0().calls.mmu_updates), 0u);
    EXPECT_EQ(get(v0().calls.multicall_entries), 0u);
}

} // namespace
} // namespace pvmmu::test
