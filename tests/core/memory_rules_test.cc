// memory_op's domain and extent rules (core/memory_rules.h), as Xen 4.17
// answers an unprivileged PV guest (<xen/memory.h>; docs/abi.md §10
// "memory_op").
#include <gtest/gtest.h>

#include "core/memory_rules.h"

namespace pvmmu::test {
namespace {

TEST(MemoryRules, ANonZeroExtentIsInvalid)
{
    EXPECT_EQ(memop_extent_check(1), -XEN_EINVAL);
    EXPECT_EQ(memop_extent_check(~0ull >> 6), -XEN_EINVAL);
    EXPECT_EQ(memop_extent_check(0), 0);
}

TEST(MemoryRules, AnIdNoDomainHasIsNoSuchDomain)
{
    EXPECT_EQ(memory_domain_check(5, 1, false), -XEN_ESRCH);
    EXPECT_EQ(memory_domain_check(DOMID_IO, 1, false), -XEN_ESRCH);
}

TEST(MemoryRules, AnotherDomainIsForAPrivilegedCaller)
{
    EXPECT_EQ(memory_domain_check(0, 1, true), -XEN_EPERM);
    EXPECT_EQ(memory_domain_check(2, 1, true), -XEN_EPERM);
}

TEST(MemoryRules, TheCallerNamesItselfByItsIdOrDomidSelf)
{
    EXPECT_EQ(memory_domain_check(DOMID_SELF, 1, false), 0);   // DOMID_SELF is no domain's id
    EXPECT_EQ(memory_domain_check(1, 1, true), 0);
    EXPECT_EQ(memory_domain_check(0, 0, true), 0);
}

TEST(MemoryRules, MaximumGpfnIsTheGuestsPfnCountLessOneAndZeroWhileItSaysNothing)
{
    EXPECT_EQ(maximum_gpfn(0), 0);
    EXPECT_EQ(maximum_gpfn(1), 0);
    EXPECT_EQ(maximum_gpfn(0x40000), 0x3ffff);
}

} // namespace
} // namespace pvmmu::test
