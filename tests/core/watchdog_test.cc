// A domain's watchdog timers (core/watchdog.h): SCHEDOP_watchdog's answers as
// Xen 4.17 gives them, invalid ids first, then arming, re-arming, freeing,
// expiry and the earliest deadline the platform arms its timer for.
#include <gtest/gtest.h>

#include <pvmmu/abi.h>

#include "core/watchdog.h"

namespace pvmmu::test {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;
constexpr uint64_t kNow = 100 * kSecond;

TEST(Watchdog, AnIdAboveTwoIsEinvalAndChangesNothing)
{
    WatchdogTimers w;
    EXPECT_EQ(w.set(3, 10, kNow), -XEN_EINVAL);
    EXPECT_EQ(w.set(~0u, 10, kNow), -XEN_EINVAL);
    EXPECT_EQ(w.deadline[0], WatchdogTimers::kFree);
    EXPECT_EQ(w.deadline[1], WatchdogTimers::kFree);
}

TEST(Watchdog, ATimerNotInUseCannotBeReArmedOrFreed)
{
    WatchdogTimers w;
    EXPECT_EQ(w.set(1, 10, kNow), -XEN_EINVAL);
    EXPECT_EQ(w.set(2, 0, kNow), -XEN_EINVAL);
    EXPECT_EQ(w.next(), WatchdogTimers::kFree);
}

TEST(Watchdog, IdZeroTakesTheFreeTimersThenIsEnospc)
{
    WatchdogTimers w;
    EXPECT_EQ(w.set(0, 10, kNow), 1);
    EXPECT_EQ(w.set(0, 20, kNow), 2);
    EXPECT_EQ(w.set(0, 30, kNow), -XEN_ENOSPC);
    EXPECT_EQ(w.deadline[0], kNow + 10 * kSecond);
    EXPECT_EQ(w.deadline[1], kNow + 20 * kSecond);
}

TEST(Watchdog, TimeoutZeroFreesATimerForTheNextIdZero)
{
    WatchdogTimers w;
    ASSERT_EQ(w.set(0, 10, kNow), 1);
    ASSERT_EQ(w.set(0, 20, kNow), 2);
    EXPECT_EQ(w.set(1, 0, kNow), 0);
    EXPECT_EQ(w.deadline[0], WatchdogTimers::kFree);
    EXPECT_EQ(w.set(0, 5, kNow), 1);
}

TEST(Watchdog, ReArmingMovesTheDeadlineFromNow)
{
    WatchdogTimers w;
    ASSERT_EQ(w.set(0, 10, kNow), 1);
    EXPECT_EQ(w.set(1, 3, kNow + 5 * kSecond), 0);
    EXPECT_EQ(w.deadline[0], kNow + 8 * kSecond);
}

TEST(Watchdog, ATimerExpiresAtItsDeadlineNotBefore)
{
    WatchdogTimers w;
    EXPECT_EQ(w.expired(~0ull - 1), 0u);   // no timer armed
    ASSERT_EQ(w.set(0, 20, kNow), 1);
    ASSERT_EQ(w.set(0, 10, kNow), 2);
    EXPECT_EQ(w.expired(kNow + 10 * kSecond - 1), 0u);
    EXPECT_EQ(w.expired(kNow + 10 * kSecond), 2u);
    EXPECT_EQ(w.expired(kNow + 20 * kSecond), 1u);
}

TEST(Watchdog, NextIsTheEarliestArmedDeadline)
{
    WatchdogTimers w;
    EXPECT_EQ(w.next(), WatchdogTimers::kFree);
    ASSERT_EQ(w.set(0, 20, kNow), 1);
    EXPECT_EQ(w.next(), kNow + 20 * kSecond);
    ASSERT_EQ(w.set(0, 10, kNow), 2);
    EXPECT_EQ(w.next(), kNow + 10 * kSecond);
    ASSERT_EQ(w.set(2, 0, kNow), 0);
    EXPECT_EQ(w.next(), kNow + 20 * kSecond);
}

} // namespace
} // namespace pvmmu::test
