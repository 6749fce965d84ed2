// HYPERVISOR_multicall (docs/design.md §3): each entry runs as its own hypercall and gets its
// own result; a failing entry does not stop the list; a nested multicall is
// refused in that entry; long lists and preempted entries continue.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class MulticallTest : public CoreTest {
protected:
    static multicall_entry_t entry(uint64_t op, std::initializer_list<uint64_t> args)
    {
        multicall_entry_t e{};
        e.op = op;
        e.result = 0xdeadbeef;
        unsigned i = 0;
        for (uint64_t a : args) e.args[i++] = a;
        return e;
    }
    long multicall(std::vector<multicall_entry_t>& list, unsigned* continuations = nullptr)
    {
        return m.call(v0(), __HYPERVISOR_multicall, uint64_t(list.data()), list.size(), 0, 0, 0,
                      continuations);
    }
};

TEST_F(MulticallTest, BadListPointerIsEfault)
{
    Snapshot before(m);
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_multicall, kBadGuestPtr, 2), -XEN_EFAULT);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MulticallTest, EmptyListSucceeds)
{
    Snapshot before(m);
    std::vector<multicall_entry_t> list;
    EXPECT_EQ(multicall(list), 0);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MulticallTest, NestedMulticallIsEinvalInThatEntryOnly)
{
    std::vector<multicall_entry_t> inner{entry(__HYPERVISOR_update_va_mapping,
                                               {lay.va(700).v, map(700, kDataFlags | NX), UVMF_NONE})};
    std::vector<multicall_entry_t> list{
        entry(__HYPERVISOR_update_va_mapping, {lay.va(600).v, map(600, kDataFlags | NX), UVMF_NONE}),
        entry(__HYPERVISOR_multicall, {uint64_t(inner.data()), 1}),
        entry(__HYPERVISOR_update_va_mapping, {lay.va(601).v, map(601, kDataFlags | NX), UVMF_NONE}),
    };
    Snapshot before(m);
    EXPECT_EQ(multicall(list), 0);
    EXPECT_EQ(long(list[0].result), 0);
    EXPECT_EQ(long(list[1].result), -XEN_EINVAL);
    EXPECT_EQ(long(list[2].result), 0);
    EXPECT_EQ(inner[0].result, 0xdeadbeefu);   // the nested list never ran
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(600, kDataFlags | NX))
                         .word(l1_of(601), idx(601), map(601, kDataFlags | NX)),
                     m));
}

TEST_F(MulticallTest, ResultsPerEntryMixingUpdateVaMappingAndMmuUpdate)
{
    std::vector<mmu_update_t> good{req(610, MMU_ATOMIC_PT_UPDATE, map(610, kDataFlags | NX)),
                                   req(611, MMU_ATOMIC_PT_UPDATE, map(611, kDataFlags | NX))};
    std::vector<mmu_update_t> bad{req(612, MMU_NORMAL_PT_UPDATE, map(612, kDataFlags | NX)),
                                  req(613, MMU_NORMAL_PT_UPDATE, map(l3(), kDataFlags)),
                                  req(614, MMU_NORMAL_PT_UPDATE, map(614, kDataFlags | NX))};
    unsigned good_done = 99, bad_done = 99;
    const uint64_t second = 0b10;
    std::vector<multicall_entry_t> list{
        entry(__HYPERVISOR_update_va_mapping,
              {lay.va(600).v, map(600, kDataFlags | NX), UVMF_INVLPG | UVMF_ALL}),
        entry(__HYPERVISOR_mmu_update,
              {uint64_t(good.data()), good.size(), uint64_t(&good_done), DOMID_SELF}),
        entry(__HYPERVISOR_update_va_mapping, {0x0000'8000'0000'0000ull, 0, UVMF_NONE}),
        entry(__HYPERVISOR_mmu_update, {uint64_t(bad.data()), bad.size(), uint64_t(&bad_done), DOMID_SELF}),
        entry(__HYPERVISOR_xen_version, {XENVER_version, 0}),
        entry(99, {}),
        entry(__HYPERVISOR_update_va_mapping,
              {lay.va(601).v, map(601, kDataFlags | NX), uint64_t(&second) | UVMF_TLB_FLUSH}),
    };
    Snapshot before(m);
    EXPECT_EQ(multicall(list), 0);
    EXPECT_EQ(long(list[0].result), 0);
    EXPECT_EQ(long(list[1].result), 0);
    EXPECT_EQ(good_done, 2u);
    EXPECT_EQ(long(list[2].result), -XEN_EINVAL);
    EXPECT_EQ(long(list[3].result), -XEN_EINVAL);
    EXPECT_EQ(bad_done, 1u);
    EXPECT_EQ(long(list[4].result), (4l << 16) | 17);
    EXPECT_EQ(long(list[5].result), -XEN_ENOSYS);
    EXPECT_EQ(long(list[6].result), 0);
    Changes expected(before);
    for (uint64_t g : {600, 601, 610, 611, 612}) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    expected.flush(cpus({0, 1}), FlushRequest{FlushKind::Page, lay.va(600)}).flush(cpus({1}));
    EXPECT_TRUE(only(expected, m));
}

TEST_F(MulticallTest, ListLongerThanOneRoundIsContinuedToTheEnd)
{
    std::vector<multicall_entry_t> list;
    for (uint64_t g = 600; g < 700; ++g)
        list.push_back(
            entry(__HYPERVISOR_update_va_mapping, {lay.va(g).v, map(g, kDataFlags | NX), UVMF_NONE}));
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 600; g < 700; ++g) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    unsigned continuations = 0;
    EXPECT_EQ(multicall(list, &continuations), 0);
    EXPECT_EQ(continuations, 1u);   // 64 entries per round
    for (const multicall_entry_t& e : list) EXPECT_EQ(long(e.result), 0);
    EXPECT_TRUE(only(expected, m));
}

class MulticallSmallBudgetTest : public CoreTest {
protected:
    MulticallSmallBudgetTest() : CoreTest(HvConfig{.preempt_budget = 8}) {}
};

TEST_F(MulticallSmallBudgetTest, PreemptedEntryIsContinuedAndGetsItsFinalResult)
{
    std::vector<mmu_update_t> reqs;
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 600; g < 620; ++g) {
        reqs.push_back(req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | NX)));
        expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    }
    expected.word(l1_of(700), idx(700), map(700, kDataFlags | NX));
    unsigned done = 0;
    multicall_entry_t list[2] = {};
    list[0].op = __HYPERVISOR_mmu_update;
    list[0].args[0] = uint64_t(reqs.data());
    list[0].args[1] = reqs.size();
    list[0].args[2] = uint64_t(&done);
    list[0].args[3] = DOMID_SELF;
    list[1].op = __HYPERVISOR_update_va_mapping;
    list[1].args[0] = lay.va(700).v;
    list[1].args[1] = map(700, kDataFlags | NX);
    unsigned continuations = 0;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_multicall, uint64_t(list), 2, 0, 0, 0, &continuations), 0);
    EXPECT_EQ(continuations, 2u);   // 20 requests at 8 per round
    EXPECT_EQ(long(list[0].result), 0);
    EXPECT_EQ(done, 20u);
    EXPECT_EQ(long(list[1].result), 0);
    EXPECT_TRUE(only(expected, m));
}

// A platform's own hypercalls (Platform::arch_hypercall) are reached for every
// number the core's table lacks, directly and inside a multicall alike: one
// dispatch. Here the platform's stand-in is the test's: op 40 returns its
// first argument plus 1; op 41 is continued once (its argument counts the
// rounds left); op 42 is an iret, which ends the list.
class ArchHypercallTest : public MulticallTest {
protected:
    ArchHypercallTest()
    {
        m.platform().arch = [this](Vcpu&, HypercallFrame& f) -> HcResult {
            seen.push_back(f.op);
            if (f.op == 40) return done(long(f.arg[0] + 1));
            if (f.op == 41) {
                if (f.arg[0] == 0) return done(7);
                --f.arg[0];
                return preempted();
            }
            if (f.op == 42) return ends_multicall(0x2222);
            return done(-XEN_ENOSYS);
        };
    }
    std::vector<uint64_t> seen;
};

TEST_F(ArchHypercallTest, DirectCallOfANumberNotTheCoresReachesThePlatform)
{
    Snapshot before(m);
    EXPECT_EQ(m.call(v0(), 40, 5), 6);
    EXPECT_EQ(m.call(v0(), 63), -XEN_ENOSYS);
    unsigned continuations = 0;
    EXPECT_EQ(m.call(v0(), 41, 2, 0, 0, 0, 0, &continuations), 7);
    EXPECT_EQ(continuations, 2u);
    EXPECT_EQ(seen, (std::vector<uint64_t>{40, 63, 41, 41, 41}));
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(ArchHypercallTest, CoreNumbersNeverReachThePlatform)
{
    std::vector<multicall_entry_t> list{entry(__HYPERVISOR_xen_version, {XENVER_version})};
    EXPECT_EQ(multicall(list), 0);
    EXPECT_EQ(long(list[0].result), (4l << 16) | 17);
    EXPECT_TRUE(seen.empty());
}

TEST_F(ArchHypercallTest, MulticallEntriesReachThePlatformAndAContinuedOneFinishesFirst)
{
    std::vector<multicall_entry_t> list{
        entry(40, {1}),
        entry(__HYPERVISOR_update_va_mapping, {lay.va(600).v, map(600, kDataFlags | NX), UVMF_NONE}),
        entry(41, {3}),
        entry(40, {9}),
        entry(63, {}),
    };
    Snapshot before(m);
    unsigned continuations = 0;
    EXPECT_EQ(multicall(list, &continuations), 0);
    EXPECT_EQ(continuations, 3u);   // the multicall continued with entry 2's rewritten argument
    EXPECT_EQ(long(list[0].result), 2);
    EXPECT_EQ(long(list[1].result), 0);
    EXPECT_EQ(long(list[2].result), 7);
    EXPECT_EQ(list[2].args[0], 0u);   // what was left, as the entry was last continued
    EXPECT_EQ(long(list[3].result), 10);
    EXPECT_EQ(long(list[4].result), -XEN_ENOSYS);
    EXPECT_EQ(seen, (std::vector<uint64_t>{40, 41, 41, 41, 41, 40, 63}));
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(ArchHypercallTest, AnEntryThatReplacesTheRegistersEndsTheList)
{
    std::vector<multicall_entry_t> list{entry(40, {1}), entry(42, {}), entry(40, {2})};
    EXPECT_EQ(multicall(list), 0x2222);   // the iret's result is the multicall's (Xen's mc_exit)
    EXPECT_EQ(long(list[0].result), 2);
    EXPECT_EQ(long(list[1].result), 0x2222);
    EXPECT_EQ(list[2].result, 0xdeadbeefu);   // never ran
    EXPECT_EQ(seen, (std::vector<uint64_t>{40, 42}));
}

} // namespace
} // namespace pvmmu::test
