// sched_op's argument rules (core/sched_args.h), as Xen 4.17 answers an
// unprivileged domain (<xen/sched.h>; docs/abi.md §10 "Shutdown").
#include <gtest/gtest.h>

#include "core/sched_args.h"

namespace pvmmu::test {
namespace {

TEST(SchedArgs, AReasonPvmmuCannotEndADomainWithIsInvalid)
{
    EXPECT_EQ(shutdown_reason_check(SHUTDOWN_MAX + 1), -XEN_EINVAL);
    EXPECT_EQ(shutdown_reason_check(255), -XEN_EINVAL);
    EXPECT_EQ(shutdown_reason_check(~0u), -XEN_EINVAL);
}

TEST(SchedArgs, EveryReasonUpToShutdownMaxIsTaken)
{
    for (unsigned r = SHUTDOWN_poweroff; r <= SHUTDOWN_MAX; ++r) EXPECT_EQ(shutdown_reason_check(r), 0) << r;
    EXPECT_EQ(shutdown_reason_check(SHUTDOWN_watchdog), 0);
}

} // namespace
} // namespace pvmmu::test
