// A vCPU's timers (core/event_ops.h): set_timer_op, the VCPUOP single-shot and
// periodic timers with Xen 4.17's errnos, the earliest deadline the platform
// arms, and timer_expire raising VIRQ_TIMER on the vCPU's own bound port.
#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kNow = 5'000 * kMs;

class VcpuTimer : public EventTest {
protected:
    long vcpu_op(unsigned cmd, Vcpu& target, const void* arg, Vcpu* caller = nullptr)
    {
        return vcpu_timer_op(hv(), caller ? *caller : v0(), target, cmd, Vaddr{uint64_t(arg)}, kNow);
    }
    long singleshot(uint64_t at, uint32_t flags = 0, Vcpu* target = nullptr)
    {
        const vcpu_set_singleshot_timer_t s{at, flags};
        return vcpu_op(VCPUOP_set_singleshot_timer, target ? *target : v0(), &s);
    }
    long periodic(uint64_t period, Vcpu* target = nullptr)
    {
        const vcpu_set_periodic_timer_t s{period};
        return vcpu_op(VCPUOP_set_periodic_timer, target ? *target : v0(), &s);
    }
    void stop_periodic(Vcpu& v) { ASSERT_EQ(vcpu_op(VCPUOP_stop_periodic_timer, v, nullptr), 0); }
};

// --- refused ------------------------------------------------------------------

TEST_F(VcpuTimer, SingleShotOfAnotherVcpuIsEinval)
{
    stop_periodic(v1());
    EXPECT_EQ(singleshot(kNow + kMs, 0, &v1()), -XEN_EINVAL);
    EXPECT_EQ(vcpu_op(VCPUOP_stop_singleshot_timer, v1(), nullptr), -XEN_EINVAL);
    EXPECT_EQ(next_deadline(v1()), kNever);
}

TEST_F(VcpuTimer, UnreadableArgumentsAreEfault)
{
    stop_periodic(v0());
    EXPECT_EQ(vcpu_op(VCPUOP_set_singleshot_timer, v0(), reinterpret_cast<void*>(kBadGuestPtr)), -XEN_EFAULT);
    EXPECT_EQ(vcpu_op(VCPUOP_set_periodic_timer, v0(), reinterpret_cast<void*>(kBadGuestPtr)), -XEN_EFAULT);
    EXPECT_EQ(next_deadline(v0()), kNever);
}

TEST_F(VcpuTimer, APastDeadlineWithFutureIsTakenAsXen417Takes)
{
    stop_periodic(v0());
    EXPECT_EQ(singleshot(kNow - 1, VCPU_SSHOTTMR_future), 0);
    EXPECT_EQ(next_deadline(v0()), kNow - 1);
}

TEST_F(VcpuTimer, APeriodBelowOneMillisecondOrPastTheMaximumIsEinval)
{
    EXPECT_EQ(periodic(kMs - 1), -XEN_EINVAL);
    EXPECT_EQ(periodic(~uint64_t(0) >> 1), -XEN_EINVAL);
    EXPECT_EQ(next_deadline(v0()), kDefaultPeriodNs);   // the default tick, untouched
}

TEST_F(VcpuTimer, OtherVcpuOpsAreNotTheTimers)
{
    EXPECT_EQ(vcpu_op(VCPUOP_up, v0(), nullptr), -XEN_ENOSYS);
}

TEST_F(VcpuTimer, ThroughTheHypercallFrameAnAbsentVcpuIsEnoent)
{
    HypercallFrame f{__HYPERVISOR_vcpu_op, {VCPUOP_stop_periodic_timer, 2, 0, 0, 0, 0}};
    EventOut o;
    EXPECT_EQ(event_hypercall(hv(), v0(), f, kNow, o).rc, -XEN_ENOENT);
    f.arg[1] = 1;
    EXPECT_EQ(event_hypercall(hv(), v0(), f, kNow, o).rc, 0);
    EXPECT_EQ(next_deadline(v1()), kNever);
}

// --- done -----------------------------------------------------------------------

TEST_F(VcpuTimer, EveryVcpuStartsWithXensHundredHertzTick)
{
    EXPECT_EQ(next_deadline(v0()), kDefaultPeriodNs);
    EXPECT_EQ(next_deadline(v1()), kDefaultPeriodNs);
}

TEST_F(VcpuTimer, SingleShotInThePastWithoutFlagsIsTakenAndFiresAtOnce)
{
    stop_periodic(v0());
    const unsigned t = bind_virq(VIRQ_TIMER, 0);
    ASSERT_EQ(singleshot(kNow - kMs), 0);
    EXPECT_EQ(next_deadline(v0()), kNow - kMs);
    const Kicks k = timer_expire(hv(), v0(), kNow);
    EXPECT_TRUE(pending(t));
    EXPECT_TRUE(k.has(0));
    EXPECT_EQ(next_deadline(v0()), kNever);   // single-shot: gone once fired
}

TEST_F(VcpuTimer, SingleShotWithBit63SetIsInThePastAndFiresAtOnce)
{
    // Xen reads timeout_abs_ns as a signed system time; ~0 is also the value
    // that means "no deadline" here, and must not disarm the timer.
    stop_periodic(v0());
    const unsigned t = bind_virq(VIRQ_TIMER, 0);
    for (const uint64_t at : {~uint64_t(0), uint64_t(1) << 63}) {
        ASSERT_EQ(singleshot(at), 0);
        EXPECT_EQ(next_deadline(v0()), kNow) << at;
        EXPECT_TRUE(timer_expire(hv(), v0(), kNow).has(0)) << at;
        EXPECT_TRUE(pending(t)) << at;
        shared->evtchn_pending[t / 64] = 0;
        info(0).evtchn_upcall_pending = 0;
        info(0).evtchn_pending_sel = 0;
    }
}

TEST_F(VcpuTimer, SingleShotFiresOnlyWhenDue)
{
    stop_periodic(v0());
    const unsigned t = bind_virq(VIRQ_TIMER, 0);
    ASSERT_EQ(singleshot(kNow + kMs, VCPU_SSHOTTMR_future), 0);
    EXPECT_EQ(timer_expire(hv(), v0(), kNow + kMs - 1).vcpus, 0u);
    EXPECT_FALSE(pending(t));
    EXPECT_TRUE(timer_expire(hv(), v0(), kNow + kMs).has(0));
    EXPECT_TRUE(pending(t));
}

TEST_F(VcpuTimer, StopSingleShotDisarms)
{
    stop_periodic(v0());
    ASSERT_EQ(singleshot(kNow + kMs), 0);
    ASSERT_EQ(vcpu_op(VCPUOP_stop_singleshot_timer, v0(), nullptr), 0);
    EXPECT_EQ(next_deadline(v0()), kNever);
}

TEST_F(VcpuTimer, TheTimerRaisesOnlyItsOwnVcpusPort)
{
    stop_periodic(v0());
    stop_periodic(v1());
    const unsigned t0 = bind_virq(VIRQ_TIMER, 0), t1 = bind_virq(VIRQ_TIMER, 1);
    ASSERT_EQ(singleshot(kNow), 0);
    const Kicks k = timer_expire(hv(), v0(), kNow);
    EXPECT_TRUE(pending(t0));
    EXPECT_FALSE(pending(t1));
    EXPECT_EQ(k.vcpus, 1u);
    EXPECT_EQ(timer_expire(hv(), v1(), kNow).vcpus, 0u);
}

TEST_F(VcpuTimer, AnExpiryWithNoBoundPortRaisesNothing)
{
    stop_periodic(v0());
    ASSERT_EQ(singleshot(kNow), 0);
    EXPECT_EQ(timer_expire(hv(), v0(), kNow).vcpus, 0u);
    for (xen_ulong_t w : shared->evtchn_pending) EXPECT_EQ(w, 0u);
    EXPECT_EQ(next_deadline(v0()), kNever);
}

TEST_F(VcpuTimer, PeriodicRearmsAPeriodAfterEachTick)
{
    const unsigned t = bind_virq(VIRQ_TIMER, 0);
    ASSERT_EQ(periodic(4 * kMs), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + 4 * kMs);
    EXPECT_TRUE(timer_expire(hv(), v0(), kNow + 5 * kMs).has(0));
    EXPECT_TRUE(pending(t));
    EXPECT_EQ(next_deadline(v0()), kNow + 9 * kMs);
    ASSERT_EQ(periodic(4 * kMs), 0);   // the same period keeps its phase
    EXPECT_EQ(next_deadline(v0()), kNow + 9 * kMs);
    stop_periodic(v0());
    EXPECT_EQ(next_deadline(v0()), kNever);
}

TEST_F(VcpuTimer, AnotherVcpusPeriodicTimerMayBeSet)
{
    ASSERT_EQ(periodic(2 * kMs, &v1()), 0);
    EXPECT_EQ(next_deadline(v1()), kNow + 2 * kMs);
}

TEST_F(VcpuTimer, NextDeadlineIsTheEarliest)
{
    ASSERT_EQ(periodic(3 * kMs), 0);
    ASSERT_EQ(singleshot(kNow + 2 * kMs), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + 2 * kMs);
    ASSERT_EQ(singleshot(kNow + 7 * kMs), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + 3 * kMs);
}

TEST_F(VcpuTimer, SetTimerOpZeroStopsAWrappedOrFarDeadlineBecomesAHundredMilliseconds)
{
    stop_periodic(v0());
    ASSERT_EQ(set_timer_op(hv(), v0(), kNow + kMs, kNow), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + kMs);
    ASSERT_EQ(set_timer_op(hv(), v0(), 0, kNow), 0);
    EXPECT_EQ(next_deadline(v0()), kNever);
    ASSERT_EQ(set_timer_op(hv(), v0(), uint64_t(-5), kNow), 0);   // negative as s_time_t
    EXPECT_EQ(next_deadline(v0()), kNow + 100 * kMs);
    ASSERT_EQ(set_timer_op(hv(), v0(), kNow + (uint64_t(1) << 50), kNow), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + 100 * kMs);
    ASSERT_EQ(set_timer_op(hv(), v0(), kNow + (uint64_t(1) << 50) - 1, kNow), 0);
    EXPECT_EQ(next_deadline(v0()), kNow + (uint64_t(1) << 50) - 1);
    ASSERT_EQ(set_timer_op(hv(), v0(), kNow - kMs, kNow), 0);   // past: fires at once
    EXPECT_EQ(next_deadline(v0()), kNow - kMs);
}

} // namespace
} // namespace pvmmu::test
