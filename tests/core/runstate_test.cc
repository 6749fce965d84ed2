// A vCPU's runstate record (core/runstate.h): time counted into the state it
// is in up to now, and a change of state, as Xen's vcpu_runstate_get and its
// context switch keep the record (<xen/vcpu.h>).
#include <gtest/gtest.h>

#include "core/runstate.h"

namespace pvmmu::test {
namespace {

vcpu_runstate_info record(int state, uint64_t since)
{
    vcpu_runstate_info r{};
    r.state = state;
    r.state_entry_time = since;
    r.time[RUNSTATE_running] = 7;
    r.time[RUNSTATE_offline] = 11;
    return r;
}

TEST(Runstate, AStateThatIsNoneOfTheFourCountsNothing)
{
    const vcpu_runstate_info r = runstate_up_to_now(record(RUNSTATE_offline + 1, 100), 500);
    EXPECT_EQ(r.time[RUNSTATE_running], 7u);
    EXPECT_EQ(r.time[RUNSTATE_offline], 11u);
    EXPECT_EQ(runstate_up_to_now(record(-1, 100), 500).time[RUNSTATE_running], 7u);
}

TEST(Runstate, AClockBehindTheEntryTimeCountsNothing)
{
    EXPECT_EQ(runstate_up_to_now(record(RUNSTATE_running, 500), 100).time[RUNSTATE_running], 7u);
    EXPECT_EQ(runstate_up_to_now(record(RUNSTATE_running, 500), 500).time[RUNSTATE_running], 7u);
}

TEST(Runstate, UpToNowAddsTheTimeSinceEntryToTheCurrentStateOnly)
{
    const vcpu_runstate_info r = runstate_up_to_now(record(RUNSTATE_running, 100), 350);
    EXPECT_EQ(r.time[RUNSTATE_running], 7u + 250);
    EXPECT_EQ(r.time[RUNSTATE_offline], 11u);
    EXPECT_EQ(r.state, RUNSTATE_running);
    EXPECT_EQ(r.state_entry_time, 100u);   // the record itself is not changed
}

TEST(Runstate, EnteringAStateClosesTheOldOneAndStartsTheNewOneNow)
{
    const vcpu_runstate_info r = runstate_enter(record(RUNSTATE_running, 100), RUNSTATE_offline, 400);
    EXPECT_EQ(r.state, RUNSTATE_offline);
    EXPECT_EQ(r.state_entry_time, 400u);
    EXPECT_EQ(r.time[RUNSTATE_running], 7u + 300);
    EXPECT_EQ(r.time[RUNSTATE_offline], 11u);
    EXPECT_EQ(runstate_up_to_now(r, 450).time[RUNSTATE_offline], 11u + 50);
}

} // namespace
} // namespace pvmmu::test
