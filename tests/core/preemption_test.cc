// Preemptible batches (docs/design.md §3, Xen's continuation semantics): after a bounded
// amount of work a batch yields with its arguments rewritten to describe what is
// left (PVMMU_MMU_UPDATE_PREEMPTED in the count), *pdone carrying the count so
// far; issuing the frame again continues where it stopped.
#include <functional>

#include "support/core_fixture.h"
#include "support/race_at.h"

namespace pvmmu::test {
namespace {

constexpr uint32_t kMillion = 1000000;

class PreemptionTest : public CoreTest {
protected:
    // n cmd-2 requests: request k sets NX on the entry of gpfn 512 + k % 512 (the
    // second L1) on even laps over the table and clears it on odd ones.
    std::vector<mmu_update_t> toggles(uint32_t n)
    {
        std::vector<mmu_update_t> reqs(n);
        for (uint32_t k = 0; k < n; ++k) {
            const uint64_t g = 512 + k % 512;
            reqs[k] = req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | ((k / 512) % 2 == 0 ? NX : 0)));
        }
        return reqs;
    }
    // The state after the first `applied` requests: each entry holds its last value.
    Changes final_state(const Snapshot& before, const std::vector<mmu_update_t>& reqs, uint32_t applied)
    {
        Changes c(before);
        for (uint32_t k = applied > 512 ? applied - 512 : 0; k < applied; ++k)
            c.word(l1_of(512 + k % 512), idx(512 + k % 512), reqs[k].val);
        return c;
    }
};

TEST_F(PreemptionTest, MillionRequestBatchCompletesThroughContinuations)
{
    const std::vector<mmu_update_t> reqs = toggles(kMillion);
    Snapshot before(m);
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(mmu_update(reqs, &done, DOMID_SELF, nullptr, &continuations), 0);
    EXPECT_EQ(done, kMillion);
    // One per preempt_budget (4096) requests, none after the last.
    EXPECT_EQ(continuations, (kMillion - 1) / hv().config().preempt_budget);
    EXPECT_GT(continuations, 0u);
    EXPECT_TRUE(only(final_state(before, reqs, kMillion), m));
}

TEST_F(PreemptionTest, MillionRequestBatchWithABadLastEntryStopsThere)
{
    std::vector<mmu_update_t> reqs = toggles(kMillion);
    reqs.back().val |= PAT;
    Snapshot before(m);
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(mmu_update(reqs, &done, DOMID_SELF, nullptr, &continuations), -XEN_EINVAL);
    EXPECT_EQ(done, kMillion - 1);
    EXPECT_EQ(continuations, (kMillion - 1) / hv().config().preempt_budget);
    EXPECT_TRUE(only(final_state(before, reqs, kMillion - 1), m));
}

class SmallBudgetTest : public CoreTest {
protected:
    SmallBudgetTest() : CoreTest(HvConfig{.preempt_budget = 8}) {}
    HcResult issue(HypercallFrame& f) { return hypercall(hv(), v0(), f); }
    mmu_update_t nx(uint64_t g) const { return req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | NX)); }
    Changes nx_set(const Snapshot& before, uint64_t first, uint64_t end)
    {
        Changes c(before);
        for (uint64_t g = first; g < end; ++g) c.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
        return c;
    }
};

TEST_F(SmallBudgetTest, PreemptedBatchRewritesItsArgumentsAndPdone)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 620; ++g) reqs.push_back(nx(g));
    Snapshot before(m);
    unsigned done = 0;
    HypercallFrame f{__HYPERVISOR_mmu_update, {uint64_t(reqs.data()), 20, uint64_t(&done), DOMID_SELF, 0, 0}};

    HcResult r = issue(f);
    EXPECT_TRUE(r.preempted());
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(f.arg[0], uint64_t(reqs.data() + 8));
    EXPECT_EQ(f.arg[1], 12u | PVMMU_MMU_UPDATE_PREEMPTED);
    EXPECT_EQ(f.arg[2], uint64_t(&done));
    EXPECT_EQ(done, 8u);
    EXPECT_TRUE(only(nx_set(before, 600, 608), m));

    r = issue(f);
    EXPECT_TRUE(r.preempted());
    EXPECT_EQ(f.arg[0], uint64_t(reqs.data() + 16));
    EXPECT_EQ(f.arg[1], 4u | PVMMU_MMU_UPDATE_PREEMPTED);
    EXPECT_EQ(done, 16u);

    r = issue(f);
    EXPECT_FALSE(r.preempted());
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(done, 20u);
    EXPECT_TRUE(only(nx_set(before, 600, 620), m));
}

TEST_F(SmallBudgetTest, ContinuationTakesItsStartingCountFromPdone)
{
    // The count so far lives in the guest's pdone between rounds (Xen's protocol).
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 612; ++g) reqs.push_back(nx(g));
    unsigned done = 0;
    HypercallFrame f{__HYPERVISOR_mmu_update, {uint64_t(reqs.data()), 12, uint64_t(&done), DOMID_SELF, 0, 0}};
    ASSERT_TRUE(issue(f).preempted());
    ASSERT_EQ(done, 8u);
    done = 100;
    const HcResult r = issue(f);
    EXPECT_FALSE(r.preempted());
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(done, 104u);
    EXPECT_EQ(*pte(611) & NX, NX);
}

TEST_F(SmallBudgetTest, FailureInALaterRoundReportsTheTotalDone)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 620; ++g) reqs.push_back(nx(g));
    reqs[13].val |= PWT;
    Snapshot before(m);
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(reqs.data()), reqs.size(), uint64_t(&done),
                     DOMID_SELF, 0, &continuations),
              -XEN_EINVAL);
    EXPECT_EQ(done, 13u);
    EXPECT_EQ(continuations, 1u);
    EXPECT_TRUE(only(nx_set(before, 600, 613), m));
}

TEST_F(SmallBudgetTest, FlagRangeCountsEveryEntryAgainstTheBudget)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 630; g += 10)
        reqs.push_back(mmu_update_t{ptr(l1_of(g), idx(g), MMU_FLAG_RANGE_UPDATE),
                                    abi::encode_flag_range(NX, NX, 10)});
    Snapshot before(m);
    unsigned done = 0;
    HypercallFrame f{__HYPERVISOR_mmu_update, {uint64_t(reqs.data()), 3, uint64_t(&done), DOMID_SELF, 0, 0}};
    HcResult r = issue(f);
    EXPECT_TRUE(r.preempted());   // 10 entries > budget 8: one request per round
    EXPECT_EQ(f.arg[1], 2u | PVMMU_MMU_UPDATE_PREEMPTED);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(nx_set(before, 600, 610), m));
    unsigned continuations = 0;
    done = 0;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(reqs.data()), 3, uint64_t(&done), DOMID_SELF,
                     0, &continuations),
              0);
    EXPECT_EQ(done, 3u);
    EXPECT_EQ(continuations, 2u);
    EXPECT_TRUE(only(nx_set(before, 600, 630), m));
}

TEST_F(SmallBudgetTest, MmuextBatchesArePreemptibleToo)
{
    std::vector<mmuext_op_t> ops(20, op_va(MMUEXT_TLB_FLUSH_LOCAL, 0));
    Snapshot before(m);
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmuext_op, uint64_t(ops.data()), ops.size(), uint64_t(&done),
                     DOMID_SELF, 0, &continuations),
              0);
    EXPECT_EQ(done, 20u);
    EXPECT_EQ(continuations, 2u);
    Changes expected(before);
    for (unsigned i = 0; i < 20; ++i) expected.flush(cpus({0}));
    EXPECT_TRUE(only(expected, m));
}

TEST_F(SmallBudgetTest, BatchOfExactlyTheBudgetIsNotPreempted)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 608; ++g) reqs.push_back(nx(g));
    Snapshot before(m);
    unsigned done = 0;
    HypercallFrame f{__HYPERVISOR_mmu_update, {uint64_t(reqs.data()), 8, uint64_t(&done), DOMID_SELF, 0, 0}};
    const HcResult r = issue(f);
    EXPECT_FALSE(r.preempted());
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(done, 8u);
    EXPECT_TRUE(only(nx_set(before, 600, 608), m));
}


// --- work charged for validation ---------------------------
//
// A pin, a base pointer or a link of an upper-level entry validates a whole
// tree on its first type reference, and its unpin or unlink devalidates it:
// the batch is charged one unit per entry of every table its domain
// (de)validated, the units of the budget, counted in Domain::table_work. Here
// each request (de)validates an L2 with 8 L1s under it: 9 tables, 4608
// entries, more than the default budget of 4096, so a batch of three is
// preempted after each of the first two.
class TreeWorkTest : public CoreTest {
protected:
    static constexpr unsigned kTrees = 3, kL1sPerTree = 8;
    static constexpr uint64_t kTablesPerTree = 1 + kL1sPerTree;

    void SetUp() override
    {
        CoreTest::SetUp();
        ASSERT_GT(kTablesPerTree * kEntriesPerTable, hv().config().preempt_budget);
        for (unsigned t = 0; t < kTrees; ++t) {
            for (uint64_t k = 0; k < kTablesPerTree; ++k) make_read_only(l2_gpfn(t) + k);
            for (uint64_t k = 1; k <= kL1sPerTree; ++k)
                table(lay.mfn(l2_gpfn(t)))[k] = map(l2_gpfn(t) + k, kTableLinkFlags);
        }
    }

    static uint64_t l2_gpfn(unsigned t) { return 700 + t * 16; }   // its L1s follow it
    Mfn tree(unsigned t) const { return lay.mfn(l2_gpfn(t)); }

    long mmuext_counted(const std::vector<mmuext_op_t>& ops, unsigned& done, unsigned& continuations)
    {
        return m.call(v0(), __HYPERVISOR_mmuext_op, uint64_t(ops.data()), ops.size(), uint64_t(&done),
                      DOMID_SELF, 0, &continuations);
    }
    long mmu_update_counted(const std::vector<mmu_update_t>& reqs, unsigned& done, unsigned& continuations)
    {
        return m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(reqs.data()), reqs.size(), uint64_t(&done),
                      DOMID_SELF, 0, &continuations);
    }
    bool validated(unsigned t)
    {
        return (frame(tree(t)).type_info.load() & ti::kValidated) != 0;
    }
};

TEST_F(TreeWorkTest, BatchOfPinsOfBigTreesIsPreempted)
{
    std::vector<mmuext_op_t> pins, unpins;
    for (unsigned t = 0; t < kTrees; ++t) {
        pins.push_back(op_mfn(MMUEXT_PIN_L2_TABLE, tree(t)));
        unpins.push_back(op_mfn(MMUEXT_UNPIN_TABLE, tree(t)));
    }
    const uint64_t work0 = d->table_work();
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(mmuext_counted(pins, done, continuations), 0);
    EXPECT_EQ(done, kTrees);
    EXPECT_EQ(continuations, kTrees - 1) << "pins";
    for (unsigned t = 0; t < kTrees; ++t) EXPECT_TRUE(validated(t)) << t;
    EXPECT_EQ(d->table_work() - work0, kTrees * kTablesPerTree * kEntriesPerTable);

    done = continuations = 0;
    EXPECT_EQ(mmuext_counted(unpins, done, continuations), 0);
    EXPECT_EQ(done, kTrees);
    EXPECT_EQ(continuations, kTrees - 1) << "unpins";
    for (unsigned t = 0; t < kTrees; ++t) EXPECT_FALSE(validated(t)) << t;
    EXPECT_EQ(d->table_work() - work0, 2 * kTrees * kTablesPerTree * kEntriesPerTable);
}

// The same work done by linking (cmd 0 on L3 entries) and unlinking the trees.
TEST_F(TreeWorkTest, BatchOfLinksOfBigTreesIsPreempted)
{
    std::vector<mmu_update_t> links, unlinks;
    for (unsigned t = 0; t < kTrees; ++t) {
        links.push_back(mmu_update_t{ptr(l3(), 10 + t, MMU_NORMAL_PT_UPDATE), map(tree(t), kTableLinkFlags)});
        unlinks.push_back(mmu_update_t{ptr(l3(), 10 + t, MMU_NORMAL_PT_UPDATE), 0});
    }
    unsigned done = 0, continuations = 0;
    EXPECT_EQ(mmu_update_counted(links, done, continuations), 0);
    EXPECT_EQ(done, kTrees);
    EXPECT_EQ(continuations, kTrees - 1) << "links";
    for (unsigned t = 0; t < kTrees; ++t) EXPECT_TRUE(validated(t)) << t;

    done = continuations = 0;
    EXPECT_EQ(mmu_update_counted(unlinks, done, continuations), 0);
    EXPECT_EQ(done, kTrees);
    EXPECT_EQ(continuations, kTrees - 1) << "unlinks";
    for (unsigned t = 0; t < kTrees; ++t) EXPECT_FALSE(validated(t)) << t;
}

// A multicall yields every 64 entries; entries that pin big trees make it yield
// once the tables they (de)validated reach the budget.
TEST_F(TreeWorkTest, MulticallOfPinsOfBigTreesIsPreempted)
{
    std::vector<mmuext_op_t> pins;
    for (unsigned t = 0; t < kTrees; ++t) pins.push_back(op_mfn(MMUEXT_PIN_L2_TABLE, tree(t)));
    std::vector<multicall_entry_t> list(kTrees);
    for (unsigned t = 0; t < kTrees; ++t) {
        list[t].op = __HYPERVISOR_mmuext_op;
        list[t].args[0] = uint64_t(&pins[t]);
        list[t].args[1] = 1;
        list[t].args[3] = DOMID_SELF;
    }
    unsigned continuations = 0;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_multicall, uint64_t(list.data()), list.size(), 0, 0, 0, &continuations),
              0);
    for (unsigned t = 0; t < kTrees; ++t) {
        EXPECT_EQ(list[t].result, 0u) << t;
        EXPECT_TRUE(validated(t)) << t;
    }
    EXPECT_EQ(continuations, kTrees - 1);
}

// Table work is charged to the domain that owns the tables:
// domain 2 pins and unpins a tree as big as the ones above while
// each of domain 1's requests runs, as another CPU would. Charged to the
// machine, that made domain 1's batch yield after every request; charged to
// domain 2, it does not touch domain 1's budget at all.
class OtherDomainTreeWorkTest : public TreeWorkTest {
protected:
    static constexpr uint64_t kTree2 = 8;   // domain 2's L2, its L1s follow it

    void SetUp() override
    {
        TreeWorkTest::SetUp();
        d2 = m.create_domain(2, 64, 1, lay2, 2);
        ASSERT_NE(d2, nullptr);
        // Domain 2's only L1 is its gpfn 3 (64 frames: L4, L3, L2, L1).
        for (uint64_t g = kTree2; g < kTree2 + kTablesPerTree; ++g) {
            const mmu_update_t r{ptr(lay2.mfn(3), unsigned(g), MMU_NORMAL_PT_UPDATE), map(lay2.mfn(g), P | US | A)};
            unsigned done = 0;
            ASSERT_EQ(m.call(d2->vcpus[0], __HYPERVISOR_mmu_update, uint64_t(&r), 1, uint64_t(&done), DOMID_SELF),
                      0);
        }
        for (uint64_t k = 1; k <= kL1sPerTree; ++k)
            table(lay2.mfn(kTree2))[k] = map(lay2.mfn(kTree2 + k), kTableLinkFlags);
    }

    // Pins and unpins domain 2's tree: 2 * 9 tables (de)validated.
    long churn()
    {
        const std::vector<mmuext_op_t> ops{op_mfn(MMUEXT_PIN_L2_TABLE, lay2.mfn(kTree2)),
                                           op_mfn(MMUEXT_UNPIN_TABLE, lay2.mfn(kTree2))};
        unsigned done = 0;
        return m.call(d2->vcpus[0], __HYPERVISOR_mmuext_op, uint64_t(ops.data()), ops.size(), uint64_t(&done),
                      DOMID_SELF);
    }

    // n cmd-0 remaps of gpfn 600's entry, each to another frame (one get_page each).
    std::vector<mmu_update_t> remaps(unsigned n) const
    {
        std::vector<mmu_update_t> reqs;
        for (unsigned k = 0; k < n; ++k) reqs.push_back(req(600, MMU_NORMAL_PT_UPDATE, map(601 + k, P | US | A)));
        return reqs;
    }

    DomainLayout lay2;
    Domain* d2 = nullptr;
};

TEST_F(OtherDomainTreeWorkTest, AnotherDomainsTableWorkDoesNotPreemptABatch)
{
    constexpr unsigned kN = 64;
    const std::vector<mmu_update_t> reqs = remaps(kN);
    const uint64_t work1 = d->table_work(), work2 = d2->table_work();
    RaceAt each(hv(), RacePoint::GetPageCounted, [&](Mfn f) { return frame(f).owner.load() == kDom; },
                [&] { EXPECT_EQ(churn(), 0); });
    unsigned done = 0, continuations = 0;
    const long rc = mmu_update_counted(reqs, done, continuations);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(done, kN);
    EXPECT_EQ(each.times(), kN);
    EXPECT_EQ(continuations, 0u);
    EXPECT_EQ(d->table_work(), work1);
    EXPECT_EQ(d2->table_work() - work2, kN * 2 * kTablesPerTree * kEntriesPerTable);
    EXPECT_FALSE(frame(lay2.mfn(kTree2)).type_info.load() & ti::kValidated);
}

// The same for a multicall, which yields once its round's table work reaches
// the budget: one-request mmu_update entries, domain 2 churning during each.
TEST_F(OtherDomainTreeWorkTest, AnotherDomainsTableWorkDoesNotPreemptAMulticall)
{
    constexpr unsigned kN = 8;
    const std::vector<mmu_update_t> reqs = remaps(kN);
    std::vector<multicall_entry_t> list(kN);
    for (unsigned k = 0; k < kN; ++k) {
        list[k].op = __HYPERVISOR_mmu_update;
        list[k].args[0] = uint64_t(&reqs[k]);
        list[k].args[1] = 1;
        list[k].args[3] = DOMID_SELF;
    }
    RaceAt each(hv(), RacePoint::GetPageCounted, [&](Mfn f) { return frame(f).owner.load() == kDom; },
                [&] { EXPECT_EQ(churn(), 0); });
    unsigned continuations = 0;
    const long rc = m.call(v0(), __HYPERVISOR_multicall, uint64_t(list.data()), list.size(), 0, 0, 0, &continuations);
    EXPECT_EQ(rc, 0);
    for (unsigned k = 0; k < kN; ++k) EXPECT_EQ(list[k].result, 0u) << k;
    EXPECT_EQ(each.times(), kN);
    EXPECT_EQ(continuations, 0u);
}

// What stays: the counter is the domain's, so the domain's other vCPUs, running
// table work of their own meanwhile, may still make a batch yield sooner (never
// later; each round completes a request). Here vCPU 1 pins and unpins one of
// domain 1's own trees during each of vCPU 0's requests.
TEST_F(OtherDomainTreeWorkTest, ItsOwnDomainsTableWorkStillCounts)
{
    constexpr unsigned kN = 4;
    const std::vector<mmu_update_t> reqs = remaps(kN);
    const std::vector<mmuext_op_t> ops{op_mfn(MMUEXT_PIN_L2_TABLE, tree(0)), op_mfn(MMUEXT_UNPIN_TABLE, tree(0))};
    RaceAt each(hv(), RacePoint::GetPageCounted,
                [&](Mfn f) { return f.v >= lay.mfn(601).v && f.v < lay.mfn(601 + kN).v; },
                [&] {
                    unsigned done = 0;
                    EXPECT_EQ(m.call(v1(), __HYPERVISOR_mmuext_op, uint64_t(ops.data()), ops.size(),
                                     uint64_t(&done), DOMID_SELF),
                              0);
                });
    unsigned done = 0, continuations = 0;
    const long rc = mmu_update_counted(reqs, done, continuations);
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(done, kN);
    EXPECT_EQ(each.times(), kN);
    EXPECT_EQ(continuations, kN - 1);
}

// A pin of a table already in use validates nothing: one unit, as before.
TEST_F(TreeWorkTest, PinOfATableInUseIsOneUnit)
{
    std::vector<mmuext_op_t> ops(kTrees, op_mfn(MMUEXT_PIN_L2_TABLE, tree(0)));
    unsigned done = 0, continuations = 0;
    ASSERT_EQ(mmuext_counted({ops[0]}, done, continuations), 0);
    // 4096 pins and unpins of the now validated L2 (pinned: unpin first).
    std::vector<mmuext_op_t> flips;
    for (unsigned k = 0; k < 2048; ++k) {
        flips.push_back(op_mfn(MMUEXT_UNPIN_TABLE, tree(0)));
        flips.push_back(op_mfn(MMUEXT_PIN_L2_TABLE, tree(0)));
    }
    // Keep the L2 validated while it is unpinned: link it too.
    unsigned d2 = 0, c2 = 0;
    ASSERT_EQ(mmu_update_counted({mmu_update_t{ptr(l3(), 10, MMU_NORMAL_PT_UPDATE), map(tree(0), kTableLinkFlags)}},
                                 d2, c2),
              0);
    done = continuations = 0;
    EXPECT_EQ(mmuext_counted(flips, done, continuations), 0);
    EXPECT_EQ(done, 4096u);
    EXPECT_EQ(continuations, 0u);   // exactly the budget
}

} // namespace
} // namespace pvmmu::test
