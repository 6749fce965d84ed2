// The domain builder's table placement (core/domain_builder.h): the initial
// tables at gpfn first_pt, for a kernel linked at its physmap's base whose
// image takes gpfn 0 (issue 14: the loader puts them after the image).
#include <gtest/gtest.h>

#include "core/domain_builder.h"
#include "sim/direct_machine.h"

namespace pvmmu::test {
namespace {

using namespace pvmmu::pte_bit;

constexpr uint64_t kFrames = 1024;   // 2 L1s, 1 L2: 5 table frames

struct Built {
    sim::DirectMachine m{2048};
    Domain d;
    DomainLayout lay;
    int rc = 0;

    explicit Built(uint64_t first_pt)
    {
        DomainSpec spec;
        spec.id = 1;
        spec.first = m.arena().allocate(kFrames);
        spec.nr_frames = kFrames;
        spec.physmap = Vaddr{0};   // a kernel linked at 0
        spec.first_pt = first_pt;
        rc = build_domain(m.hv(), d, spec, lay);
    }
    uint64_t l1e(uint64_t g) { return m.table(lay.mfn(lay.l1_gpfn(g)))[g % kEntriesPerTable]; }
};

TEST(DomainBuilder, TablesGoToFirstPtAndOnlyTheyAreReadOnly)
{
    static_assert(builder_table_frames(kFrames) == 5);
    Built b(700);
    ASSERT_EQ(b.rc, 0);
    EXPECT_EQ(b.lay.first_pt, 700u);
    EXPECT_EQ(b.lay.l4.v, b.lay.mfn(700).v);
    EXPECT_EQ(b.lay.first_l1, 703u);
    EXPECT_EQ(b.lay.nr_pt_frames, 5u);
    for (uint64_t g = 0; g < kFrames; ++g) {
        const bool table = g >= 700 && g < 705;
        ASSERT_EQ(b.l1e(g), Pte::make(b.lay.mfn(g), P | US | A | (table ? 0 : RW)).v) << g;
    }
    // The L4 is pinned and typed: the validation path accepted the tree.
    EXPECT_NE(b.m.hv().frame(b.lay.l4).type_info.load() & ti::kPinned, 0u);
    EXPECT_EQ(b.d.vcpus[0].guest_table.v, b.lay.l4.v);
}

TEST(DomainBuilder, TablesPastTheDomainAreRefused)
{
    EXPECT_EQ(Built(kFrames - 5).rc, 0);
    EXPECT_EQ(Built(kFrames - 4).rc, -XEN_EINVAL);
    EXPECT_EQ(Built(~0ull - 2).rc, -XEN_EINVAL);   // no wrap
}

} // namespace
} // namespace pvmmu::test
