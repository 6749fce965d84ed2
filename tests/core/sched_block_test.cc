// SCHEDOP_block, SCHEDOP_poll and SCHEDOP_yield (core/event_ops.h): when a
// vCPU is left blocked, what wakes it (and kicks it), and poll's errnos.
#include <vector>

#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

constexpr uint64_t kNow = 1'000'000'000;

class SchedBlock : public EventTest {
protected:
    long sched(unsigned cmd, const void* arg, Vcpu* v = nullptr)
    {
        out = EventOut{};
        return sched_op(hv(), v ? *v : v0(), cmd, Vaddr{uint64_t(arg)}, kNow, out);
    }
    long poll(const std::vector<evtchn_port_t>& ports, uint64_t timeout = 0)
    {
        sched_poll_t p{};
        set_xen_guest_handle(p.ports, const_cast<evtchn_port_t*>(ports.data()));
        p.nr_ports = unsigned(ports.size());
        p.timeout = timeout;
        return sched(SCHEDOP_poll, &p);
    }
    void mask_all()
    {
        for (xen_ulong_t& w : shared->evtchn_mask) w = ~xen_ulong_t(0);
    }
    void stop_all_periodic()
    {
        for (Vcpu* v : {&v0(), &v1()})
            ASSERT_EQ(vcpu_timer_op(hv(), v0(), *v, VCPUOP_stop_periodic_timer, Vaddr{0}, kNow), 0);
    }
    bool not_blocked() { return !vcpu_blocked(v0()) && ev->poll_mask.load() == 0; }
};

// --- refused ------------------------------------------------------------------

TEST_F(SchedBlock, OtherSchedOpsAreThePlatforms)
{
    EXPECT_EQ(sched(SCHEDOP_shutdown, nullptr), -XEN_ENOSYS);
    EXPECT_EQ(sched(99, nullptr), -XEN_ENOSYS);
}

TEST_F(SchedBlock, PollWithAnUnreadableArgumentIsEfault)
{
    EXPECT_EQ(sched(SCHEDOP_poll, reinterpret_cast<void*>(kBadGuestPtr)), -XEN_EFAULT);
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, PollOfMoreThan128PortsIsEinval)
{
    const std::vector<evtchn_port_t> ports(129, 1);
    EXPECT_EQ(poll(ports), -XEN_EINVAL);
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, PollOfAPortPastTheAbiIsEinval)
{
    EXPECT_EQ(poll({1, 4096}), -XEN_EINVAL);
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, PollWithUnreadablePortsIsEfault)
{
    sched_poll_t p{};
    set_xen_guest_handle(p.ports, reinterpret_cast<evtchn_port_t*>(kBadGuestPtr));
    p.nr_ports = 1;
    EXPECT_EQ(sched(SCHEDOP_poll, &p), -XEN_EFAULT);
    EXPECT_TRUE(not_blocked());
}

// --- done -----------------------------------------------------------------------

TEST_F(SchedBlock, YieldReturnsAtOnce)
{
    EXPECT_EQ(sched(SCHEDOP_yield, nullptr), 0);
    EXPECT_FALSE(out.block);
}

TEST_F(SchedBlock, BlockEnablesEventsAndWaitsForOne)
{
    info(0).evtchn_upcall_mask = 1;
    const unsigned p = bind_ipi(0);
    ASSERT_EQ(sched(SCHEDOP_block, nullptr), 0);
    EXPECT_TRUE(out.block);
    EXPECT_TRUE(vcpu_blocked(v0()));
    EXPECT_EQ(info(0).evtchn_upcall_mask, 0);
    ASSERT_EQ(send(p), 0);
    EXPECT_FALSE(vcpu_blocked(v0()));
    EXPECT_TRUE(out.kicks.has(0));
}

TEST_F(SchedBlock, BlockWithAnUpcallPendingDoesNotBlock)
{
    info(0).evtchn_upcall_mask = 1;
    info(0).evtchn_upcall_pending = 1;
    ASSERT_EQ(sched(SCHEDOP_block, nullptr), 0);
    EXPECT_FALSE(out.block);
    EXPECT_FALSE(vcpu_blocked(v0()));
}

TEST_F(SchedBlock, AnEventForAnotherVcpuDoesNotWakeABlockedOne)
{
    const unsigned p = bind_ipi(1);
    ASSERT_EQ(sched(SCHEDOP_block, nullptr), 0);
    ASSERT_EQ(send(p), 0);
    EXPECT_TRUE(vcpu_blocked(v0()));
    EXPECT_EQ(out.kicks.vcpus, 2u);
}

TEST_F(SchedBlock, PollOfAPendingPortReturnsAtOnce)
{
    const unsigned p = bind_ipi(0);
    mask_all();
    ASSERT_EQ(send(p), 0);
    EXPECT_EQ(poll({evtchn_port_t(p)}), 0);
    EXPECT_FALSE(out.block);
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, PollWithAnUnmaskedUpcallPendingReturnsAtOnce)
{
    info(0).evtchn_upcall_pending = 1;
    EXPECT_EQ(poll({5}), 0);
    EXPECT_FALSE(out.block);
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, APolledPortWakesThePollerEvenMasked)
{
    const unsigned a = bind_ipi(0), b = bind_ipi(0);
    mask_all();
    info(0).evtchn_upcall_mask = 1;   // as Linux polls: events off
    ASSERT_EQ(poll({evtchn_port_t(a)}), 0);
    EXPECT_TRUE(out.block);
    EXPECT_TRUE(vcpu_blocked(v0()));
    ASSERT_EQ(send(b), 0);            // not the polled port
    EXPECT_TRUE(vcpu_blocked(v0()));
    ASSERT_EQ(send(a), 0);
    EXPECT_FALSE(vcpu_blocked(v0()));
    EXPECT_TRUE(out.kicks.has(0));
    EXPECT_TRUE(not_blocked());
}

TEST_F(SchedBlock, PollOfSeveralPortsWakesOnAnyPort)
{
    const unsigned a = bind_ipi(0), b = bind_ipi(0), c = bind_ipi(0);
    mask_all();
    ASSERT_EQ(poll({evtchn_port_t(a), evtchn_port_t(b)}), 0);
    ASSERT_TRUE(vcpu_blocked(v0()));
    ASSERT_EQ(send(c), 0);   // Xen wakes a many-port poller on any port
    EXPECT_FALSE(vcpu_blocked(v0()));
}

TEST_F(SchedBlock, PollTimesOutAtItsDeadline)
{
    stop_all_periodic();
    ASSERT_EQ(poll({5}, kNow + 1000), 0);
    ASSERT_TRUE(vcpu_blocked(v0()));
    EXPECT_EQ(next_deadline(v0()), kNow + 1000);
    EXPECT_EQ(timer_expire(hv(), v0(), kNow + 999).vcpus, 0u);
    EXPECT_TRUE(vcpu_blocked(v0()));
    EXPECT_TRUE(timer_expire(hv(), v0(), kNow + 1000).has(0));
    EXPECT_TRUE(not_blocked());
    EXPECT_EQ(next_deadline(v0()), kNever);
}

TEST_F(SchedBlock, ATimerTickWakesABlockedVcpu)
{
    const unsigned t = bind_virq(VIRQ_TIMER, 0);
    ASSERT_EQ(sched(SCHEDOP_block, nullptr), 0);
    ASSERT_TRUE(out.block);
    const Kicks k = timer_expire(hv(), v0(), kDefaultPeriodNs);
    EXPECT_TRUE(pending(t));
    EXPECT_TRUE(k.has(0));
    EXPECT_FALSE(vcpu_blocked(v0()));
}

} // namespace
} // namespace pvmmu::test
