// What "a refused request changes nothing" (docs/design.md §3) leaves aside, pinned down:
// the two traces a refused request may leave, which the fuzzer's compare
// (fuzz/state.h) therefore tolerates. Both are as in Xen and neither is
// observable through references: a nested table validated and then released
// inside the refused request keeps its page-table type at type count 0, and
// the US bit that validation added to its present entries.
#include "invariants/invariant_check.h"
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class RefusedRequest : public CoreTest {
protected:
    static constexpr uint64_t kL2 = 700, kL1 = 701;

    // Frame kL2 as an L2 whose slot 0 links kL1 (valid, entries without US) and
    // whose slot 1 links gpfn 902 as an L1 — invalid: 902 is mapped writable.
    void prepare()
    {
        make_read_only(kL2);
        make_read_only(kL1);
        table(lay.mfn(kL1))[0] = map(900, P | A);
        table(lay.mfn(kL2))[0] = map(kL1, P | RW | A);
        table(lay.mfn(kL2))[1] = map(902, P | RW | A);
    }
};

TEST_F(RefusedRequest, RefusedPinKeepsEveryCountAndTheInvariants)
{
    prepare();
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L2_TABLE, lay.mfn(kL2))}, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(invariants_hold(m));
    const Mfn l1 = lay.mfn(kL1);
    for (uint64_t g : {kL2, kL1, uint64_t(900), uint64_t(902)}) {
        EXPECT_EQ(frame(lay.mfn(g)).count.load(), before.frame(lay.mfn(g)).count) << "gpfn " << g;
        EXPECT_EQ(frame(lay.mfn(g)).type_count(), ti::count(before.frame(lay.mfn(g)).type_info)) << "gpfn " << g;
    }
    // The traces: the nested L1 keeps its type (count 0, not validated) ...
    EXPECT_EQ(frame(l1).type(), PageType::L1);
    EXPECT_FALSE(frame(l1).validated());
    // ... and the US bit its validation gave entry 0.
    EXPECT_EQ(table(l1)[0], map(900, P | US | A));
}

} // namespace
} // namespace pvmmu::test
