// Reference accounting (docs/design.md §4): what each mapping and link holds, validation on
// the first type reference and devalidation on the last, and the TLB-flush clock
// that keeps a frame from becoming a page table while a stale writable
// translation to it may survive in some TLB.
#include "support/core_fixture.h"
#include "support/race_at.h"

namespace pvmmu::test {
namespace {

class RefsTest : public CoreTest {
protected:
    static constexpr uint64_t kTable = 700;   // the frame that becomes an L1
    static constexpr unsigned kSlot = 5;      // a free slot of the domain's L2
    Mfn t() const { return lay.mfn(kTable); }

    // Frame kTable, no longer mapped writable, filled as an L1: gpfn 900 writable,
    // 901 read-only, 902 without US (validation adds it).
    void prepare_l1()
    {
        make_read_only(kTable);
        table(t())[0] = map(900, kDataFlags);
        table(t())[1] = map(901, P | US | A);
        table(t())[2] = map(902, P | A);
    }
    mmu_update_t link(uint64_t val, unsigned slot = kSlot) const
    {
        return mmu_update_t{ptr(l2(), slot, MMU_NORMAL_PT_UPDATE), val};
    }
    // The validation of the prepared L1, as a set of changes.
    Changes& validated(Changes& c) const
    {
        return c.type_info(t(), PageType::L1, 1, ti::kValidated)
            .count(t(), +1)
            .word(t(), 2, map(902, P | US | A))
            .count(lay.mfn(900), +1)
            .type_count(lay.mfn(900), +1)
            .count(lay.mfn(901), +1)
            .count(lay.mfn(902), +1)
            .word(l2(), kSlot, map(t(), kTableLinkFlags));
    }
};

// --- refused changes -----------------------------------------------------------

TEST_F(RefsTest, ValidatedL1CannotBeMappedWritable)
{
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(kTable, MMU_ATOMIC_PT_UPDATE, map(kTable, kDataFlags))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(RefsTest, FrameMappedWritableCannotBeLinkedAsATable)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({link(map(kTable, kTableLinkFlags))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(RefsTest, TableCannotBeLinkedIntoItself)
{
    Snapshot before(m);
    unsigned done = 99;
    // The L2 as an L1 of itself: it is an L2 in use.
    EXPECT_EQ(mmu_update({link(map(l2(), kTableLinkFlags))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(RefsTest, LinkOfAnInvalidTableFailsAndRestoresEveryCount)
{
    prepare_l1();
    table(t())[3] = map(l4(), kDataFlags);   // a writable mapping of the L4
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

// --- accounting of successful changes ------------------------------------------

TEST_F(RefsTest, RwRaiseTakesAWritableTypeRefAndALowerDropsIt)
{
    make_read_only(800);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(800, MMU_ATOMIC_PT_UPDATE, map(800, kDataFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(
        Changes(before).word(l1_of(800), idx(800), map(800, kDataFlags)).type_count(lay.mfn(800), +1), m));
    Snapshot mid(m);
    EXPECT_EQ(mmu_update({req(800, MMU_NORMAL_PT_UPDATE, map(800, P | US | A))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(
        Changes(mid).word(l1_of(800), idx(800), map(800, P | US | A)).type_count(lay.mfn(800), -1), m));
}

TEST_F(RefsTest, SecondWritableMappingTakesASecondTypeRef)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(801, MMU_NORMAL_PT_UPDATE, map(800, kDataFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(801), idx(801), map(800, kDataFlags))
                         .count(lay.mfn(800), +1)
                         .type_count(lay.mfn(800), +1)
                         .count(lay.mfn(801), -1)
                         .type_count(lay.mfn(801), -1),
                     m));
}

TEST_F(RefsTest, RemappingMovesTheGeneralRefToTheNewFrame)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(800, MMU_ATOMIC_PT_UPDATE, map(3, P | US | A)),      // RO onto a page table
                          req(801, MMU_NORMAL_PT_UPDATE, map(Mfn{lay.mfn(801).v + 1}, P | US | A))},
                         &done),
              0);
    EXPECT_EQ(done, 2u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(800), idx(800), map(3, P | US | A))
                         .count(lay.mfn(3), +1)
                         .count(lay.mfn(800), -1)
                         .type_count(lay.mfn(800), -1)
                         .word(l1_of(801), idx(801), map(802, P | US | A))
                         .count(lay.mfn(802), +1)
                         .count(lay.mfn(801), -1)
                         .type_count(lay.mfn(801), -1),
                     m));
}

TEST_F(RefsTest, LinkingAnL1ValidatesItAfterFlushingCpusThatMayHoldItWritable)
{
    prepare_l1();
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    Changes expected(before);
    validated(expected).flush(cpus({0, 1}));
    EXPECT_TRUE(only(expected, m));
}

// XSA-401's race: if the flush ran before the type changed, another CPU could
// take and drop a writable reference in between and keep a writable translation
// the flush never saw. The type changes first, so during the flush the frame can
// no longer be made writable.
TEST_F(RefsTest, NoWritableReferenceCanBeTakenWhileATypeChangeFlushes)
{
    prepare_l1();
    int during_flush = 1;
    m.platform().on_flush = [&] { during_flush = get_page_type(hv(), t(), PageType::Writable); };
    unsigned done = 0;
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    m.platform().on_flush = nullptr;
    EXPECT_EQ(during_flush, -XEN_EINVAL);
    EXPECT_EQ(frame(t()).type(), PageType::L1);
    EXPECT_TRUE(frame(t()).validated());
}

// The last writable reference goes (vCPU 0 lowers its mapping of 700) while
// vCPU 1 maps 700 writable at gpfn 100, flushes its whole TLB, walks that
// mapping into its TLB and removes it again: the type count goes 1 -> 2 -> 1
// between put_page_type's read of the count and its exchange, which still
// succeeds. The frame's stamp must come after CPU 1's flush, or CPU 1, which
// may still cache 700 writable, is skipped when 700 becomes a page table
// (docs/security.md §7.5).
TEST_F(RefsTest, TypeChangeFlushesACpuThatCachedAWritableMappingMadeDuringTheLastDrop)
{
    int raced = -1;
    RaceAt race(hv(), RacePoint::LastTypeDrop, t(), [&] {
        unsigned done = 0;
        raced = int(mmu_update({req(100, MMU_NORMAL_PT_UPDATE, map(kTable, kDataFlags))}, &done, DOMID_SELF, &v1()));
        if (raced == 0) raced = int(mmuext({op_va(MMUEXT_TLB_FLUSH_LOCAL, 0)}, &done, &v1()));
        if (raced == 0)
            raced = int(mmu_update({req(100, MMU_NORMAL_PT_UPDATE, map(100, kDataFlags))}, &done, DOMID_SELF, &v1()));
    });
    make_read_only(kTable);
    ASSERT_TRUE(race.fired());
    ASSERT_EQ(raced, 0);
    ASSERT_EQ(frame(t()).type_count(), 0u);
    m.platform().flushes.clear();
    unsigned done = 0;
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    ASSERT_EQ(m.platform().flushes.size(), 1u);
    EXPECT_TRUE(m.platform().flushes[0].cpus.has(1)) << "CPU 1 may still hold gpfn 100 -> 700 writable";
}

TEST_F(RefsTest, NoFlushWhenEveryCpuFlushedSinceTheWritableMappingWent)
{
    prepare_l1();
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_va(MMUEXT_TLB_FLUSH_ALL, 0)}, &done), 0);
    Snapshot before(m);
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    Changes expected(before);
    EXPECT_TRUE(only(validated(expected), m));
}

TEST_F(RefsTest, OnlyCpusThatHaveNotFlushedSinceAreFlushed)
{
    prepare_l1();
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_va(MMUEXT_TLB_FLUSH_LOCAL, 0)}, &done, &v1()), 0);   // CPU 1 flushed
    Snapshot before(m);
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    Changes expected(before);
    EXPECT_TRUE(only(validated(expected).flush(cpus({0})), m));
}

TEST_F(RefsTest, SinglePageFlushesDoNotCountAsAFlushOfTheWholeTlb)
{
    prepare_l1();
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_va(MMUEXT_INVLPG_ALL, lay.va(kTable).v)}, &done), 0);
    Snapshot before(m);
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    Changes expected(before);
    EXPECT_TRUE(only(validated(expected).flush(cpus({0, 1})), m));
}

TEST_F(RefsTest, SecondLinkTakesATypeRefWithoutRevalidating)
{
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags), kSlot + 1)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l2(), kSlot + 1, map(t(), kTableLinkFlags))
                         .count(t(), +1)
                         .type_count(t(), +1),
                     m));
}

TEST_F(RefsTest, UnlinkingTheLastRefDevalidatesAndDropsTheEntriesRefs)
{
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({link(0)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l2(), kSlot, 0)
                         .type_info(t(), PageType::L1, 0, 0)
                         .count(t(), -1)
                         .count(lay.mfn(900), -1)
                         .type_count(lay.mfn(900), -1)
                         .count(lay.mfn(901), -1)
                         .count(lay.mfn(902), -1),
                     m));
}

TEST_F(RefsTest, UnlinkedTableCanBeMappedWritableAgainAfterAFlush)
{
    // The reverse type change: no CPU may still walk the old table.
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    must_update(link(0));
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(kTable, MMU_ATOMIC_PT_UPDATE, map(kTable, kDataFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(kTable), idx(kTable), map(kTable, kDataFlags))
                         .type_info(t(), PageType::Writable, 1, ti::kValidated)
                         .flush(cpus({0, 1})),
                     m));
}

TEST_F(RefsTest, ReLinkOfAnUnlinkedTableRevalidatesWithoutAFlushIfNothingWentWritable)
{
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    must_update(link(0));
    Snapshot before(m);
    unsigned done = 0;
    // Same type as before: no TLB can hold a writable translation from the table's
    // time as an L1 (it never was writable since), so no flush.
    EXPECT_EQ(mmu_update({link(map(t(), kTableLinkFlags))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l2(), kSlot, map(t(), kTableLinkFlags))
                         .type_info(t(), PageType::L1, 1, ti::kValidated)
                         .count(t(), +1)
                         .count(lay.mfn(900), +1)
                         .type_count(lay.mfn(900), +1)
                         .count(lay.mfn(901), +1)
                         .count(lay.mfn(902), +1),
                     m));
}

TEST_F(RefsTest, FlagChangeOfALinkKeepsTheTableValidated)
{
    prepare_l1();
    must_update(link(map(t(), kTableLinkFlags)));
    Snapshot before(m);
    unsigned done = 0;
    // NX and RW cleared at L2: flag-only at an upper level, no references move.
    EXPECT_EQ(mmu_update({link(map(t(), P | US | A | NX))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l2(), kSlot, map(t(), P | US | A | NX)), m));
}

TEST_F(RefsTest, PinOfAnL2ValidatesItsNewL1sWithItAndFlushesOnce)
{
    // 700 becomes an L2 that links 701, a fresh L1 that maps gpfn 900.
    make_read_only(700);
    make_read_only(701);
    table(lay.mfn(700))[0] = map(701, kTableLinkFlags);
    table(lay.mfn(701))[0] = map(900, P | RW | A);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L2_TABLE, lay.mfn(700))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({0, 1}))   // the CPUs flushed for 700 need none for 701
                         .type_info(lay.mfn(700), PageType::L2, 1, ti::kValidated | ti::kPinned)
                         .count(lay.mfn(700), +1)
                         .type_info(lay.mfn(701), PageType::L1, 1, ti::kValidated)
                         .count(lay.mfn(701), +1)
                         .word(lay.mfn(701), 0, map(900, kDataFlags))
                         .count(lay.mfn(900), +1)
                         .type_count(lay.mfn(900), +1),
                     m));
}

TEST_F(RefsTest, PinOfAnL2WhoseNewL1IsInvalidRestoresBoth)
{
    make_read_only(700);
    make_read_only(701);
    table(lay.mfn(700))[0] = map(701, kTableLinkFlags);
    table(lay.mfn(701))[0] = map(900, P | RW | A);
    table(lay.mfn(701))[1] = map(Mfn{5}, P | US | A);   // a hypervisor frame
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L2_TABLE, lay.mfn(700))}, &done), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(RefsTest, UnlinkingTheL3DevalidatesTheWholeTreeBelowIt)
{
    Snapshot before(m);
    Changes expected(before);
    expected.word(l4(), 1, 0);
    // Each table loses its link from above and, as its L1 goes, its read-only mapping.
    expected.type_info(l3(), PageType::L3, 0, 0).count(l3(), -2);
    expected.type_info(l2(), PageType::L2, 0, 0).count(l2(), -2);
    expected.type_info(l1_of(0), PageType::L1, 0, 0).count(l1_of(0), -2);
    expected.type_info(l1_of(512), PageType::L1, 0, 0).count(l1_of(512), -2);
    expected.count(l4(), -1);
    for (uint64_t g = 5; g < kDomFrames; ++g) expected.count(lay.mfn(g), -1).type_count(lay.mfn(g), -1);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({mmu_update_t{ptr(l4(), 1, MMU_NORMAL_PT_UPDATE), 0}}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

} // namespace
} // namespace pvmmu::test
