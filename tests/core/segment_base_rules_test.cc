// set_segment_base's argument rules (core/segment_base_rules.h; docs/abi.md
// §10, docs/security.md "Segment bases").
#include <gtest/gtest.h>

#include "core/segment_base_rules.h"

namespace pvmmu::test {
namespace {

TEST(SegmentBaseRules, AnUnknownWhichIsInvalid)
{
    EXPECT_EQ(set_segment_base_check(4, 0), -XEN_EINVAL);
    EXPECT_EQ(set_segment_base_check(~0u, 0), -XEN_EINVAL);
}

TEST(SegmentBaseRules, ANonCanonicalOrHypervisorBaseIsInvalid)
{
    for (unsigned which : {SEGBASE_FS, SEGBASE_GS_KERNEL, SEGBASE_GS_USER}) {
        EXPECT_EQ(set_segment_base_check(which, 0x0000800000000000), -XEN_EINVAL) << which;
        EXPECT_EQ(set_segment_base_check(which, 0xffff800000000000), -XEN_EINVAL) << which;   // slot 256
        EXPECT_EQ(set_segment_base_check(which, 0xffff87ffffffffff), -XEN_EINVAL) << which;   // slot 271
    }
}

TEST(SegmentBaseRules, AGuestBaseIsTaken)
{
    for (unsigned which : {SEGBASE_FS, SEGBASE_GS_KERNEL, SEGBASE_GS_USER}) {
        EXPECT_EQ(set_segment_base_check(which, 0), 0) << which;
        EXPECT_EQ(set_segment_base_check(which, 0x00007fffffffffff), 0) << which;
        EXPECT_EQ(set_segment_base_check(which, 0xffff880000000000), 0) << which;
    }
}

TEST(SegmentBaseRules, AUserGsSelectorIsAlwaysTakenWithItsRplForcedUnlessNull)
{
    EXPECT_EQ(set_segment_base_check(SEGBASE_GS_USER_SEL, 0xffff800000000000), 0);
    EXPECT_EQ(user_gs_selector(0), 0);
    EXPECT_EQ(user_gs_selector(3), 3);
    EXPECT_EQ(user_gs_selector(4), 7);
    EXPECT_EQ(user_gs_selector(0xe02b), 0xe02b);
    EXPECT_EQ(user_gs_selector(0xe028), 0xe02b);
}

} // namespace
} // namespace pvmmu::test
