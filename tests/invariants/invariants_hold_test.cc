// The invariant checker passes on every state the core produces through valid
// (and refused) hypercalls: fresh domains, page tables built from guest frames,
// pinned, linked, unlinked and unpinned, RW flips by every command, new base
// pointers, foreign mappings with the privilege, and preempted batches checked
// between their rounds. Its cost on a 4096-frame machine is printed, not asserted
// (docs/design.md §9: no timed assertions).
#include <chrono>
#include <iostream>

#include "invariants/invariant_check.h"
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class InvariantsHold : public CoreTest {
protected:
    static constexpr uint64_t kTable = 700;   // a data frame that becomes an L1
    static constexpr unsigned kSlot = 5;      // a free slot of the domain's L2
    Mfn t() const { return lay.mfn(kTable); }

    void prepare_l1()
    {
        make_read_only(kTable);
        table(t())[0] = map(900, kDataFlags);
        table(t())[1] = map(901, P | US | A);
        table(t())[2] = map(902, P | A);   // validation adds US
    }
    void ext(unsigned cmd, Mfn f)
    {
        unsigned done = 0;
        ASSERT_EQ(mmuext({op_mfn(cmd, f)}, &done), 0) << "mmuext cmd " << cmd;
    }
};

TEST_F(InvariantsHold, OnAFreshDomain) { EXPECT_TRUE(invariants_hold(m)); }

TEST_F(InvariantsHold, OnTwoFreshDomains)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2, 2), nullptr);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(InvariantsHold, ThroughTheLifeOfAGuestBuiltL1)
{
    prepare_l1();
    EXPECT_TRUE(invariants_hold(m));
    must_update(mmu_update_t{ptr(l2(), kSlot, MMU_NORMAL_PT_UPDATE), map(t(), kTableLinkFlags)});
    EXPECT_TRUE(invariants_hold(m));
    ext(MMUEXT_PIN_L1_TABLE, t());
    EXPECT_TRUE(invariants_hold(m));
    must_update(mmu_update_t{ptr(l2(), kSlot, MMU_ATOMIC_PT_UPDATE), 0});   // unlink, still pinned
    EXPECT_TRUE(invariants_hold(m));
    ext(MMUEXT_UNPIN_TABLE, t());
    EXPECT_TRUE(invariants_hold(m));
    must_update(req(kTable, MMU_NORMAL_PT_UPDATE, map(kTable, kDataFlags)));   // data again
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(InvariantsHold, AfterRwFlipsByEveryCommand)
{
    must_update(req(600, MMU_ATOMIC_PT_UPDATE, map(600, P | US | A)));
    must_update(req(601, MMU_NORMAL_PT_UPDATE, map(601, P | US | A)));
    EXPECT_TRUE(invariants_hold(m));
    // The whole second L1 (gpfns 512-1023) read-only, then writable, by cmd 4.
    const uint64_t ro = abi::encode_flag_range(RW, 0, 512), rw = abi::encode_flag_range(RW, RW, 512);
    must_update(mmu_update_t{ptr(l1_of(512), 0, MMU_FLAG_RANGE_UPDATE), ro});
    EXPECT_TRUE(invariants_hold(m));
    must_update(mmu_update_t{ptr(l1_of(512), 0, MMU_FLAG_RANGE_UPDATE), rw});
    EXPECT_TRUE(invariants_hold(m));
    ASSERT_EQ(update_va_mapping(lay.va(602), map(602, P | US | A), UVMF_INVLPG | UVMF_LOCAL), 0);
    EXPECT_TRUE(invariants_hold(m));
    ASSERT_EQ(update_va_mapping(lay.va(602), 0, UVMF_NONE), 0);   // unmapped
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(InvariantsHold, AfterANewBasePointer)
{
    constexpr uint64_t kL4 = 710;
    make_read_only(kL4);
    table(lay.mfn(kL4))[1] = table(l4())[1];   // the physmap slot: a link to the L3
    ext(MMUEXT_PIN_L4_TABLE, lay.mfn(kL4));
    ext(MMUEXT_NEW_BASEPTR, lay.mfn(kL4));
    ext(MMUEXT_NEW_USER_BASEPTR, l4());
    EXPECT_TRUE(invariants_hold(m));
    ext(MMUEXT_NEW_BASEPTR, l4());
    ext(MMUEXT_NEW_USER_BASEPTR, Mfn{0});   // no user table
    ext(MMUEXT_UNPIN_TABLE, lay.mfn(kL4));
    EXPECT_TRUE(invariants_hold(m));
}

// A frame the hypervisor holds writable for itself (bare metal: shared_info)
// is counted, and the guest cannot turn it into a page table: with its own
// mapping read-only, pinning it as an L1 is refused and changes nothing.
TEST_F(InvariantsHold, WithAFrameTheHypervisorHoldsWritable)
{
    ASSERT_EQ(hold_writable(hv(), *d, t()), 0);
    EXPECT_TRUE(invariants_hold(m));
    make_read_only(kTable);
    EXPECT_TRUE(invariants_hold(m));
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, t())}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before), m));
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(InvariantsHold, AfterRefusedRequests)
{
    prepare_l1();
    table(t())[3] = map(l4(), kDataFlags);   // a writable mapping of the L4: invalid
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, t())}, &done), -XEN_EINVAL);
    EXPECT_EQ(mmu_update({req(0, MMU_NORMAL_PT_UPDATE, map(0, kDataFlags))}, &done), -XEN_EINVAL);
    EXPECT_EQ(mmu_update({req(800, MMU_NORMAL_PT_UPDATE, map(Mfn{0}, P | US | A))}, &done), -XEN_EPERM);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(InvariantsHold, WithAForeignMappingUnderThePrivilege)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2, 2), nullptr);
    d->policy.allow(Perm::MapForeign);
    unsigned done = 0;
    ASSERT_EQ(mmu_update({req(800, MMU_NORMAL_PT_UPDATE, map(lay2.mfn(40), kDataFlags))}, &done, 2), 0);
    ASSERT_EQ(mmu_update({req(801, MMU_NORMAL_PT_UPDATE, map(Mfn{16}, P | US | A))}, &done, DOMID_IO), 0);
    EXPECT_TRUE(invariants_hold(m));
}

// A batch preempted every 3 PTEs: each round leaves a consistent machine.
class InvariantsHoldPreempted : public CoreTest {
protected:
    InvariantsHoldPreempted() : CoreTest(HvConfig{256, 271, 3}) {}
};

TEST_F(InvariantsHoldPreempted, BetweenTheRoundsOfABatch)
{
    std::vector<mmu_update_t> reqs;
    for (uint64_t g = 600; g < 620; ++g) reqs.push_back(req(g, MMU_ATOMIC_PT_UPDATE, map(g, P | US | A)));
    unsigned done = 0;
    HypercallFrame f{__HYPERVISOR_mmu_update, {uint64_t(reqs.data()), reqs.size(), uint64_t(&done), DOMID_SELF, 0, 0}};
    unsigned rounds = 0;
    for (;;) {
        const HcResult r = hypercall(hv(), v0(), f);
        ++rounds;
        EXPECT_TRUE(invariants_hold(m)) << "after round " << rounds;
        if (!r.preempted()) {
            EXPECT_EQ(r.rc, 0);
            break;
        }
    }
    EXPECT_EQ(done, 20u);
    EXPECT_GT(rounds, 5u);
}

// The cost of one check: a 4096-frame machine, one domain of 4064
// frames (11 tables, ~4100 present entries). Printed; not a timed assertion.
TEST(InvariantCost, OneCheckOfA4096FrameMachine)
{
    sim::DirectMachine m(4096);
    DomainLayout lay;
    ASSERT_NE(m.create_domain(1, 4096 - 32, 1, lay), nullptr);
    InvariantChecker c(m.hv());
    ASSERT_TRUE(c.run().ok()) << c.describe();
    constexpr int kRuns = 200;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kRuns; ++i) (void)c.run();
    const auto t1 = std::chrono::steady_clock::now();
    const double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / kRuns;
    std::cout << "[ cost     ] check_invariants: " << us << " us per check; " << c.report().frames
              << " frames, " << c.report().tables << " tables, " << c.report().entries << " present entries\n";
    RecordProperty("us_per_check", std::to_string(us));
    EXPECT_EQ(c.report().frames, 4096u);
    EXPECT_EQ(c.report().tables, lay.nr_pt_frames);
}

} // namespace
} // namespace pvmmu::test
