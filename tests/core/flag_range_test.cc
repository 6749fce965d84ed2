// MMU_FLAG_RANGE_UPDATE (mmu_update cmd 4, docs/design.md §3): each present entry of the
// range becomes (cur & ~M) | (N & M), validated like a cmd-2 update; holes are left
// alone; a request is all-or-nothing.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class FlagRangeTest : public CoreTest {
protected:
    // A FLAG_RANGE request on the entries mapping gpfns [g, g + count).
    mmu_update_t fr(uint64_t g, uint64_t mask, uint64_t bits, uint32_t count) const
    {
        return mmu_update_t{ptr(l1_of(g), idx(g), MMU_FLAG_RANGE_UPDATE),
                            abi::encode_flag_range(mask, bits, count)};
    }
    long one(const mmu_update_t& r, unsigned& done) { return mmu_update({r}, &done); }
};

// --- invalid requests ----------------------------------------------------------

TEST_F(FlagRangeTest, MbzBitsAreEinval)
{
    for (unsigned bit = 58; bit < 64; ++bit) {
        Snapshot before(m);
        mmu_update_t r = fr(600, NX, NX, 4);
        r.val |= 1ull << bit;
        unsigned done = 99;
        EXPECT_EQ(one(r, done), -XEN_EINVAL) << bit;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(FlagRangeTest, Count1023FromIndexZeroRunsPastThePageAndIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(fr(512, NX, NX, 1023), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(FlagRangeTest, RangePastTheEndOfThePageIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(fr(512 + 500, NX, NX, 13), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_EQ(one(fr(512 + 511, NX, NX, 2), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(FlagRangeTest, PtrToATableOtherThanAnL1IsEinval)
{
    for (Mfn t : {l4(), l3(), l2(), lay.mfn(700), Mfn{0}, Mfn{kMachineFrames}}) {
        Snapshot before(m);
        unsigned done = 99;
        mmu_update_t r{ptr(t, 0, MMU_FLAG_RANGE_UPDATE), abi::encode_flag_range(NX, NX, 1)};
        EXPECT_EQ(one(r, done), -XEN_EINVAL) << t.v;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(FlagRangeTest, DisallowedNewBitsAreEinval)
{
    for (uint64_t bit : {PWT, PCD, PAT, G, uint64_t(1) << 59, uint64_t(1) << 62}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(fr(600, bit | NX, bit | NX, 8), done), -XEN_EINVAL) << bit;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(FlagRangeTest, RwRaiseOntoPageTableFramesIsEinval)
{
    // gpfns 0-4 are the page tables, mapped read-only.
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(fr(0, RW, RW, 5), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_EQ(one(fr(4, RW, RW, 1), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(FlagRangeTest, FailureInTheMiddleOfARangeLeavesEveryEntryAndCountUnchanged)
{
    // Entries 400..409 read-only, 405 remapped to the L2 page-table frame: an RW
    // raise over the range takes references for 400..404 and then fails at 405.
    must_update(fr(400, RW, 0, 10));
    must_update(req(405, MMU_NORMAL_PT_UPDATE, map(l2(), P | US | A)));
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(fr(400, RW | NX, RW | NX, 10), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(FlagRangeTest, FailingRangeMidBatchKeepsEarlierRequestsAndDoneCount)
{
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 600; g < 604; ++g) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    unsigned done = 99;
    EXPECT_EQ(mmu_update({fr(600, NX, NX, 4), fr(1020, NX, NX, 5), fr(700, NX, NX, 4)}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

// --- valid requests ------------------------------------------------------------

TEST_F(FlagRangeTest, CountZeroIsASuccessfulNoOp)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(fr(600, NX, NX, 0), done), 0);
    EXPECT_EQ(done, 1u);
    // Even aimed at a frame that is no table: there is nothing to do.
    EXPECT_EQ(one(mmu_update_t{ptr(lay.mfn(700), 0, MMU_FLAG_RANGE_UPDATE), abi::encode_flag_range(RW, 0, 0)},
                  done),
              0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(FlagRangeTest, Count512FromIndexZeroCoversTheWholeTable)
{
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 512; g < 1024; ++g) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    unsigned done = 0;
    EXPECT_EQ(one(fr(512, NX, NX, 512), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, RangeEndingAtTheLastEntryIsAccepted)
{
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 1012; g < 1024; ++g) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    unsigned done = 0;
    EXPECT_EQ(one(fr(1012, NX, NX, 12), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, FlagOnlyChangesTouchNoReferencesEvenOverPageTableMappings)
{
    // NX, a software bit (11:9 and 58:52) and clearing NX again: no frame changes.
    const uint64_t soft = (1ull << 9) | (1ull << 55);
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 0; g < 20; ++g) {
        const uint64_t rw = g < 5 ? 0 : RW;
        expected.word(l1_of(g), idx(g), map(g, P | rw | US | A | soft));
    }
    unsigned done = 0;
    EXPECT_EQ(mmu_update({fr(0, NX | soft, NX | soft, 20), fr(0, NX, 0, 20)}, &done), 0);
    EXPECT_EQ(done, 2u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, RwLowerDropsWritableReferencesAndRaiseTakesThemBack)
{
    Snapshot before(m);
    Changes lowered(before);
    for (uint64_t g = 100; g < 110; ++g)
        lowered.word(l1_of(g), idx(g), map(g, P | US | A)).type_count(lay.mfn(g), -1);
    unsigned done = 0;
    EXPECT_EQ(one(fr(100, RW, 0, 10), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(lowered, m));

    Snapshot mid(m);
    Changes raised(mid);
    for (uint64_t g = 100; g < 110; ++g)
        raised.word(l1_of(g), idx(g), map(g, kDataFlags)).type_count(lay.mfn(g), +1);
    EXPECT_EQ(one(fr(100, RW, RW, 10), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(raised, m));
}

TEST_F(FlagRangeTest, RaiseOverMixedEntriesTakesReferencesOnlyForTheReadOnlyOnes)
{
    must_update(fr(100, RW, 0, 5));   // 100..104 read-only, 105..109 writable
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 100; g < 110; ++g) {
        expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
        if (g < 105) expected.type_count(lay.mfn(g), +1);
    }
    unsigned done = 0;
    EXPECT_EQ(one(fr(100, RW | NX, RW | NX, 10), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, ClearingPresentDropsEveryReferenceOfTheRange)
{
    must_update(req(102, MMU_NORMAL_PT_UPDATE, map(102, P | US | A)));   // one read-only entry
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 100; g < 104; ++g) {
        const uint64_t rw = g == 102 ? 0 : RW;
        expected.word(l1_of(g), idx(g), map(g, rw | US | A)).count(lay.mfn(g), -1);
        if (rw) expected.type_count(lay.mfn(g), -1);
    }
    unsigned done = 0;
    EXPECT_EQ(one(fr(100, P, 0, 4), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, HolesAndSwapEntriesAreLeftUntouched)
{
    const uint64_t swap = 0x0000'0000'dead'b000ull | RW | US | PWT | PCD | A | D;   // P = 0
    must_update(req(302, MMU_NORMAL_PT_UPDATE, 0));
    must_update(req(303, MMU_NORMAL_PT_UPDATE, swap));
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g : {300, 301, 304, 305}) expected.word(l1_of(g), idx(g), map(g, P | US | NX));
    unsigned done = 0;
    // RW lower, NX set, A and D cleared: on the present entries only; and setting P
    // does not make holes present.
    EXPECT_EQ(one(fr(300, RW | NX | A | D, NX, 6), done), 0);
    EXPECT_EQ(done, 1u);
    for (uint64_t g : {300, 301, 304, 305}) expected.type_count(lay.mfn(g), -1);
    EXPECT_TRUE(only(expected, m));

    Snapshot mid(m);
    EXPECT_EQ(one(fr(302, P, P, 2), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(unchanged(mid, m));
}

TEST_F(FlagRangeTest, AccessedAndDirtySurviveUnlessTheMaskCoversThem)
{
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D);   // "hardware" dirtied 600
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(fr(600, NX, NX, 2), done), 0);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(600, kDataFlags | D | NX))
                         .word(l1_of(601), idx(601), map(601, kDataFlags | NX)),
                     m));
    Snapshot mid(m);
    EXPECT_EQ(one(fr(600, A | D, 0, 2), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(mid)
                         .word(l1_of(600), idx(600), map(600, P | RW | US | NX))
                         .word(l1_of(601), idx(601), map(601, P | RW | US | NX)),
                     m));
}

TEST_F(FlagRangeTest, PresentEntriesStayUserAccessible)
{
    // As every install does (adjust_guest_entry): clearing US has no effect.
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(fr(600, US | NX, NX, 3), done), 0);
    EXPECT_EQ(done, 1u);
    Changes expected(before);
    for (uint64_t g = 600; g < 603; ++g) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    EXPECT_TRUE(only(expected, m));
}

TEST_F(FlagRangeTest, HighFlagBitsAreReplacedWhereTheMaskSaysSo)
{
    // Bits 63:52 (software bits and NX) in both directions in one request.
    must_update(req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | (1ull << 53) | NX)));
    Snapshot before(m);
    const uint64_t mask = (1ull << 53) | (1ull << 54) | NX;
    unsigned done = 0;
    EXPECT_EQ(one(fr(600, mask, 1ull << 54, 1), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | (1ull << 54))), m));
}

} // namespace
} // namespace pvmmu::test
