// VCPUOP_register_vcpu_info's argument rules (core/vcpu_info_rules.h), as
// Xen 4.17 checks them (<xen/vcpu.h>; docs/abi.md §10 "vcpu_info").
#include <gtest/gtest.h>

#include "core/vcpu_info_rules.h"

namespace pvmmu::test {
namespace {

constexpr uint64_t kLast = kPageSize - sizeof(vcpu_info);   // the last offset that fits

TEST(VcpuInfoRules, ARecordThatCrossesItsPageIsNoSuchAddress)
{
    EXPECT_EQ(vcpu_info_offset_check(kLast + 1), -XEN_ENXIO);
    EXPECT_EQ(vcpu_info_offset_check(kPageSize), -XEN_ENXIO);
    EXPECT_EQ(vcpu_info_offset_check(~0ull), -XEN_ENXIO);
}

// pvmmu's rule, not verified against Xen 4.17, which may refuse a misaligned
// offset (docs/abi.md §11, "Not yet checked on Xen").
TEST(VcpuInfoRules, PvmmuTakesAnyOffsetThatFitsAlignedOrNot)
{
    EXPECT_EQ(vcpu_info_offset_check(0), 0);
    EXPECT_EQ(vcpu_info_offset_check(1), 0);
    EXPECT_EQ(vcpu_info_offset_check(kLast), 0);
}

TEST(VcpuInfoRules, AnotherVcpuThatIsUpMayNotMove)
{
    EXPECT_EQ(vcpu_info_target_check(false, true), -XEN_EINVAL);
    EXPECT_EQ(vcpu_info_target_check(false, false), 0);
    EXPECT_EQ(vcpu_info_target_check(true, true), 0);
}

TEST(VcpuInfoRules, ASecondRegistrationIsInvalid)
{
    EXPECT_EQ(vcpu_info_once_check(true), -XEN_EINVAL);
    EXPECT_EQ(vcpu_info_once_check(false), 0);
}

} // namespace
} // namespace pvmmu::test
