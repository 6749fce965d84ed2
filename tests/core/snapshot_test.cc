// The machine snapshot the other tests rely on (tests/support/snapshot.h) sees
// every kind of change it claims to see, and reports each one.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

using SnapshotTest = CoreTest;

TEST_F(SnapshotTest, BuilderLeavesTheDocumentedReferenceState)
{
    // L4: pinned (1) + a base pointer per vCPU (2); general refs also the RO mapping.
    EXPECT_EQ(frame(l4()).type_info.load(), typed(PageType::L4, 3, ti::kValidated | ti::kPinned));
    EXPECT_EQ(frame(l4()).count.load(), 4u);
    for (Mfn t : {l3(), l2(), l1_of(0), l1_of(512)}) {
        EXPECT_EQ(frame(t).count.load(), 2u);   // the link from above + the RO mapping
        EXPECT_EQ(frame(t).type_count(), 1u);
        EXPECT_TRUE(frame(t).validated());
    }
    EXPECT_EQ(frame(lay.mfn(600)).type_info.load(), typed(PageType::Writable, 1, ti::kValidated));
    EXPECT_EQ(frame(lay.mfn(600)).count.load(), 1u);
    EXPECT_EQ(*pte(600), map(600, kDataFlags));
    EXPECT_EQ(*pte(3), map(3, P | US | A));
    EXPECT_EQ(hv().m2p(lay.mfn(600)), 600u);
}

TEST_F(SnapshotTest, UntouchedMachineHasNoDifferences)
{
    Snapshot before(m);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(SnapshotTest, ReportsEveryKindOfUnexpectedChange)
{
    Snapshot before(m);
    table(lay.mfn(700))[3] = 42;                            // memory of a data frame
    frame(lay.mfn(701)).count.fetch_add(1);                 // general count
    frame(lay.mfn(702)).type_info.fetch_add(1);             // type count
    hv().m2p(lay.mfn(703)) = 7;                             // m2p
    m.platform().flush_tlbs(cpus({1}), FlushRequest{});     // a flush
    v1().guest_table_user = lay.mfn(9);                     // a vCPU's user base
    table(Mfn{0})[0] = 1;                                   // a hypervisor frame
    const std::vector<std::string> diff = Changes(before).mismatches(Snapshot(m));
    EXPECT_EQ(diff.size(), 7u);
    EXPECT_FALSE(unchanged(before, m));
}

TEST_F(SnapshotTest, ExpectedChangesMatchAndMissingOnesAreReported)
{
    Snapshot before(m);
    table(lay.mfn(700))[3] = 42;
    frame(lay.mfn(701)).count.fetch_add(1);
    EXPECT_TRUE(only(Changes(before).word(lay.mfn(700), 3, 42).count(lay.mfn(701), +1), m));
    // An expected change that did not happen is a difference too.
    EXPECT_FALSE(only(Changes(before).word(lay.mfn(700), 3, 42).count(lay.mfn(701), +1)
                          .type_count(lay.mfn(701), +1),
                      m));
    // And a change to another value than the expected one.
    EXPECT_FALSE(only(Changes(before).word(lay.mfn(700), 3, 43).count(lay.mfn(701), +1), m));
}

} // namespace
} // namespace pvmmu::test
