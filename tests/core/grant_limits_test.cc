// The grant-table limits a domain may be built with (core/grant_limits.h).
#include <gtest/gtest.h>

#include "core/grant_limits.h"

namespace pvmmu::test {
namespace {

TEST(GrantLimits, ATableWithoutFramesOrAboveXensDefaultIsInvalid)
{
    EXPECT_EQ(grant_limits_check(GrantLimits{0, 0}), -XEN_EINVAL);
    EXPECT_EQ(grant_limits_check(GrantLimits{kMaxGrantFrames + 1, 0}), -XEN_EINVAL);
    EXPECT_EQ(grant_limits_check(GrantLimits{1, kMaxMaptrackFrames + 1}), -XEN_EINVAL);
    EXPECT_FALSE(grant_frames_ok(0));
    EXPECT_FALSE(grant_frames_ok((1ull << 32) + 1));   // a word that would be 1 cut to 32 bits
    EXPECT_FALSE(maptrack_frames_ok(1ull << 32));       // 0 cut to 32 bits
}

TEST(GrantLimits, OneFrameToXensDefaultAndNoMaptrackToItsDefaultAreTaken)
{
    EXPECT_EQ(kMaxGrantFrames, 64u);
    EXPECT_EQ(kMaxMaptrackFrames, 1024u);
    EXPECT_EQ(grant_limits_check(GrantLimits{1, 0}), 0);
    EXPECT_EQ(grant_limits_check(GrantLimits{kMaxGrantFrames, kMaxMaptrackFrames}), 0);
    EXPECT_EQ(grant_limits_check(GrantLimits{}), 0);
}

} // namespace
} // namespace pvmmu::test
