// The invariant checker is shown to catch what it looks for (docs/design.md §9: a detector
// is shown to catch the bug): each test corrupts a valid machine behind the
// core's back in one way a core bug could, and expects the checker to fail
// naming the broken rule.
#include "invariants/invariant_check.h"
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class InvariantsDetect : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        ASSERT_TRUE(invariants_hold(m));   // every corruption starts from a valid machine
    }
    uint64_t& entry_of(uint64_t g) { return *pte(g); }
    std::atomic<uint64_t>& type_info(Mfn f) { return frame(f).type_info; }
};

// --- reference counts -----------------------------------------------------------

TEST_F(InvariantsDetect, BumpedGeneralCount)
{
    frame(lay.mfn(700)).count.fetch_add(1);
    EXPECT_TRUE(invariant_broken(m, "general count differs"));
}

TEST_F(InvariantsDetect, LostGeneralReference)
{
    frame(l3()).count.fetch_sub(1);
    EXPECT_TRUE(invariant_broken(m, "general count differs"));
}

TEST_F(InvariantsDetect, BumpedTypeCountOfATable)
{
    type_info(l2()).fetch_add(1);
    EXPECT_TRUE(invariant_broken(m, "type count differs"));
}

TEST_F(InvariantsDetect, LostWritableTypeReference)
{
    type_info(lay.mfn(700)).fetch_sub(1);   // writable, count 1 -> 0: mapped RW, unaccounted
    EXPECT_TRUE(invariant_broken(m, "type count differs"));
}

TEST_F(InvariantsDetect, EntryRemovedWithoutDroppingItsReferences)
{
    entry_of(700) = 0;
    EXPECT_TRUE(invariant_broken(m, "general count differs"));
}

// --- writable mappings of page tables --------------------------------------------

TEST_F(InvariantsDetect, WritableMappingOfAnL1WrittenIntoATable)
{
    entry_of(3) = map(3, kDataFlags);   // gpfn 3 is the L1 that maps gpfns 0-511: now RW
    EXPECT_TRUE(invariant_broken(m, "page-table frame mapped writable"));
}

TEST_F(InvariantsDetect, WritableMappingOfTheL4WrittenIntoATable)
{
    entry_of(700) = map(l4(), kDataFlags);
    EXPECT_TRUE(invariant_broken(m, "page-table frame mapped writable"));
}

TEST_F(InvariantsDetect, WritableMappingOfAFrameNotTypedWritable)
{
    type_info(lay.mfn(700)).store(ti::with_type(PageType::None));   // refs kept, type gone
    EXPECT_TRUE(invariant_broken(m, "not typed writable"));
}

// --- who may be mapped -----------------------------------------------------------

TEST_F(InvariantsDetect, HypervisorFrameMappedDirectly)
{
    entry_of(700) = map(Mfn{0}, P | US | A);
    EXPECT_TRUE(invariant_broken(m, "hypervisor frame mapped"));
}

TEST_F(InvariantsDetect, HypervisorFrameReferenced)
{
    frame(Mfn{3}).count.fetch_add(1);
    EXPECT_TRUE(invariant_broken(m, "hypervisor frame is referenced"));
}

TEST_F(InvariantsDetect, DomainFrameHandedToTheHypervisor)
{
    frame(lay.mfn(700)).owner.store(kOwnerXen);
    EXPECT_TRUE(invariant_broken(m, "hypervisor frame mapped"));
    EXPECT_TRUE(invariant_broken(m, "different number of frames"));
}

TEST_F(InvariantsDetect, IoFrameMappedWithoutPrivilege)
{
    entry_of(700) = map(Mfn{sim::Arena::kXenFrames}, P | US | A);
    EXPECT_TRUE(invariant_broken(m, "I/O frame mapped without privilege"));
}

TEST_F(InvariantsDetect, ForeignMappingAfterThePrivilegeWent)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2, 2), nullptr);
    d->policy.allow(Perm::MapForeign);
    unsigned done = 0;
    ASSERT_EQ(mmu_update({req(800, MMU_NORMAL_PT_UPDATE, map(lay2.mfn(40), P | US | A))}, &done, 2), 0);
    ASSERT_TRUE(invariants_hold(m));
    d->policy.deny(Perm::MapForeign);
    EXPECT_TRUE(invariant_broken(m, "foreign frame mapped without privilege"));
}

TEST_F(InvariantsDetect, LinkToAnotherDomainsTable)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2, 2), nullptr);
    table(l2())[5] = map(lay2.mfn(3), kTableLinkFlags);   // domain 2's L1
    EXPECT_TRUE(invariant_broken(m, "link to a frame of another owner"));
}

TEST_F(InvariantsDetect, LinkToADataFrame)
{
    table(l2())[5] = map(lay.mfn(700), kTableLinkFlags);
    EXPECT_TRUE(invariant_broken(m, "no table of the next lower level"));
}

TEST_F(InvariantsDetect, LinkSkippingALevel)
{
    table(l3())[5] = map(l1_of(0), kTableLinkFlags);   // L3 -> L1
    EXPECT_TRUE(invariant_broken(m, "no table of the next lower level"));
}

TEST_F(InvariantsDetect, LinkToATableThatLostValidation)
{
    type_info(l1_of(0)).fetch_and(~ti::kValidated);
    EXPECT_TRUE(invariant_broken(m, "link to a table that is not validated"));
    EXPECT_TRUE(invariant_broken(m, "in use but not validated"));
}

// --- entry contents --------------------------------------------------------------

TEST_F(InvariantsDetect, HeldFrameThatIsNotWritable)
{
    d->held[d->nr_held++] = l4();   // claimed held, but an L4 without the reference
    EXPECT_TRUE(invariant_broken(m, "held frame not a writable frame of its domain"));
}

TEST_F(InvariantsDetect, HypervisorL4SlotWritten)
{
    table(l4())[256] = table(l4())[1];
    EXPECT_TRUE(invariant_broken(m, "hypervisor L4 slot not the platform's entry"));
}

TEST_F(InvariantsDetect, DisallowedFlagInAnL1Entry)
{
    entry_of(700) |= PCD;
    EXPECT_TRUE(invariant_broken(m, "disallowed flag bits"));
}

TEST_F(InvariantsDetect, SuperpageBitInAnL2Entry)
{
    table(l2())[0] |= PS;
    EXPECT_TRUE(invariant_broken(m, "disallowed flag bits"));
}

TEST_F(InvariantsDetect, PresentEntryWithoutUs)
{
    entry_of(700) &= ~US;
    EXPECT_TRUE(invariant_broken(m, "without US"));
}

TEST_F(InvariantsDetect, EntryNamingAFrameBeyondMemory)
{
    entry_of(700) = Pte::make(Mfn{kMachineFrames + 5}, P | US | A).v;
    EXPECT_TRUE(invariant_broken(m, "beyond machine memory"));
}

// --- frame state, pins and base pointers ------------------------------------------

TEST_F(InvariantsDetect, FrameLeftBusy)
{
    type_info(l2()).fetch_or(ti::kBusy);
    EXPECT_TRUE(invariant_broken(m, "busy"));
}

TEST_F(InvariantsDetect, PageLockLeftHeld)
{
    frame(l2()).lock.lock(m.platform());
    EXPECT_TRUE(invariant_broken(m, "lock held"));
    frame(l2()).lock.unlock();
}

TEST_F(InvariantsDetect, PinFlagOnADataFrame)
{
    type_info(lay.mfn(700)).fetch_or(ti::kPinned);
    EXPECT_TRUE(invariant_broken(m, "pinned frame is not a validated page table"));
}

TEST_F(InvariantsDetect, UnpinnedWithoutDroppingThePinsReferences)
{
    type_info(l4()).fetch_and(~ti::kPinned);
    EXPECT_TRUE(invariant_broken(m, "type count differs"));
    EXPECT_TRUE(invariant_broken(m, "general count differs"));
}

TEST_F(InvariantsDetect, BasePointerToAnL3)
{
    v0().guest_table = l3();
    EXPECT_TRUE(invariant_broken(m, "base pointer is no validated L4"));
}

TEST_F(InvariantsDetect, TypeNoneWithATypeCount)
{
    type_info(lay.mfn(1000)).store(ti::with_type(PageType::None) | 1);
    EXPECT_TRUE(invariant_broken(m, "type none with type references"));
}

TEST_F(InvariantsDetect, ScratchTooSmall)
{
    FrameTally one{};
    InvariantReport r;
    EXPECT_FALSE(check_invariants(hv(), TallySpan{&one, 1}, r));
    ASSERT_EQ(r.kept(), 1u);
    EXPECT_STREQ(r[0].reason, "invariant scratch smaller than the machine");
}

TEST_F(InvariantsDetect, ReportKeepsTheFirstViolationsAndCountsAll)
{
    for (uint64_t g = 600; g < 620; ++g) frame(lay.mfn(g)).count.fetch_add(1);
    InvariantChecker c(hv());
    EXPECT_FALSE(c.run().ok());
    EXPECT_EQ(c.report().total(), 20u);
    EXPECT_EQ(c.report().kept(), InvariantReport::kMaxKept);
    EXPECT_EQ(c.report()[0].frame, lay.mfn(600));
}

} // namespace
} // namespace pvmmu::test
