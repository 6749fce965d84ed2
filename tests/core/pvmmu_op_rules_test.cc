// pvmmu_op's argument rules (core/pvmmu_op_rules.h; docs/abi.md §10
// "pvmmu_op (55)").
#include <gtest/gtest.h>

#include "core/pvmmu_op_rules.h"

namespace pvmmu::test {
namespace {

TEST(PvmmuOpRules, AVcpuTheDomainDoesNotHaveIsInvalidOnAllSixtyFourBits)
{
    EXPECT_EQ(pvmmu_op_vcpu_check(2, 2), -XEN_EINVAL);
    EXPECT_EQ(pvmmu_op_vcpu_check(1ull << 32, 2), -XEN_EINVAL);   // 0 cut to 32 bits
    EXPECT_EQ(pvmmu_op_vcpu_check(~0ull, 2), -XEN_EINVAL);
    EXPECT_EQ(pvmmu_op_vcpu_check(0, 2), 0);
    EXPECT_EQ(pvmmu_op_vcpu_check(1, 2), 0);
}

TEST(PvmmuOpRules, InstallRetriesOnlyForTheOnlyDomainThatRan)
{
    EXPECT_EQ(install_retries_check(2), -XEN_EPERM);
    EXPECT_EQ(install_retries_check(0), -XEN_EPERM);
    EXPECT_EQ(install_retries_check(1), 0);
}

TEST(PvmmuOpRules, CheckInvariantsOnlyWithTheModuleWord)
{
    EXPECT_EQ(check_invariants_check(false), -XEN_EPERM);
    EXPECT_EQ(check_invariants_check(true), 0);
}

TEST(PvmmuOpRules, CheckInvariantsReturnsTheCountCappedBelowTheErrnos)
{
    EXPECT_EQ(check_invariants_result(0), 0);
    EXPECT_EQ(check_invariants_result(3), 3);
    EXPECT_EQ(check_invariants_result(0x7fffffff), 0x7fffffff);
    EXPECT_EQ(check_invariants_result(0x80000000), 0x7fffffff);
    EXPECT_EQ(check_invariants_result(~0ull), 0x7fffffff);
}

} // namespace
} // namespace pvmmu::test
