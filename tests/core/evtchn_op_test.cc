// HYPERVISOR_event_channel_op, 2-level ABI (core/event_ops.h; FIFO: evtchn_fifo_test.cc): each sub-op's
// errno for each bad argument first, with nothing changed, then what it does
// to the ports and to the bits a guest reads (docs/abi.md "Event channels").
#include <cstring>

#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

class EvtchnOp : public EventTest {
protected:
    // The port table and the bitmaps, to show a refused sub-op changed nothing.
    struct State {
        std::vector<uint8_t> ports, shared;
        unsigned valid;
    };
    State state() const
    {
        State s;
        s.ports.assign(reinterpret_cast<const uint8_t*>(ev->ports),
                       reinterpret_cast<const uint8_t*>(ev->ports) + sizeof(ev->ports));
        s.shared.assign(reinterpret_cast<const uint8_t*>(shared.get()),
                        reinterpret_cast<const uint8_t*>(shared.get()) + sizeof(shared_info_t));
        s.valid = ev->valid;
        return s;
    }
    bool same(const State& a) const
    {
        const State b = state();
        return a.ports == b.ports && a.shared == b.shared && a.valid == b.valid;
    }
};

// --- refused ------------------------------------------------------------------

TEST_F(EvtchnOp, WithoutEventStateEverySubOpIsEnosys)
{
    d->events = nullptr;
    evtchn_bind_ipi_t b{0, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_ipi, b), -XEN_ENOSYS);
}

TEST_F(EvtchnOp, UnknownSubOpsAreEnosys)
{
    const State before = state();
    uint64_t arg[4] = {};
    for (unsigned cmd : {unsigned(EVTCHNOP_bind_pirq), 14u /* reset_cont, newer than 4.17 */, 99u})
        EXPECT_EQ(op(cmd, arg), -XEN_ENOSYS) << cmd;
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, UnreadableArgumentIsEfaultForEverySubOp)
{
    const State before = state();
    for (unsigned cmd : {EVTCHNOP_bind_interdomain, EVTCHNOP_bind_virq, EVTCHNOP_close, EVTCHNOP_send,
                         EVTCHNOP_status, EVTCHNOP_alloc_unbound, EVTCHNOP_bind_ipi, EVTCHNOP_bind_vcpu,
                         EVTCHNOP_unmask, EVTCHNOP_reset, EVTCHNOP_set_priority, EVTCHNOP_init_control,
                         EVTCHNOP_expand_array})
        EXPECT_EQ(op_bad_pointer(cmd), -XEN_EFAULT) << cmd;
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, AllocUnboundForNoDomainIsEsrchForAnotherEperm)
{
    ASSERT_NE(second_domain(), nullptr);
    const State before = state();
    evtchn_alloc_unbound_t a{9, DOMID_SELF, 0};
    EXPECT_EQ(op(EVTCHNOP_alloc_unbound, a), -XEN_ESRCH);
    a.dom = 2;
    EXPECT_EQ(op(EVTCHNOP_alloc_unbound, a), -XEN_EPERM);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, NoFreePortIsEnospc)
{
    ev->max_port = 3;
    for (unsigned want = 1; want <= 3; ++want) EXPECT_EQ(alloc_unbound(), want);
    const State before = state();
    evtchn_alloc_unbound_t a{DOMID_SELF, DOMID_SELF, 0};
    EXPECT_EQ(op(EVTCHNOP_alloc_unbound, a), -XEN_ENOSPC);
    evtchn_bind_ipi_t b{0, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_ipi, b), -XEN_ENOSPC);
    evtchn_bind_virq_t bv{VIRQ_TIMER, 0, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_virq, bv), -XEN_ENOSPC);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, BindVirqBadVirqOrVcpu)
{
    const State before = state();
    evtchn_bind_virq_t b{NR_VIRQS, 0, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_virq, b), -XEN_EINVAL);
    b = {VIRQ_CONSOLE, 1, 0};   // a global VIRQ is vCPU 0's
    EXPECT_EQ(op(EVTCHNOP_bind_virq, b), -XEN_EINVAL);
    b = {VIRQ_TIMER, 2, 0};     // two vCPUs
    EXPECT_EQ(op(EVTCHNOP_bind_virq, b), -XEN_ENOENT);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, BindVirqTwiceIsEexist)
{
    bind_virq(VIRQ_TIMER, 1);
    const State before = state();
    evtchn_bind_virq_t b{VIRQ_TIMER, 1, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_virq, b), -XEN_EEXIST);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, BindIpiToNoVcpuIsEnoent)
{
    const State before = state();
    evtchn_bind_ipi_t b{2, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_ipi, b), -XEN_ENOENT);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, SendOnAPortNotBoundToSendIsEinval)
{
    const unsigned virq = bind_virq(VIRQ_DEBUG, 0);
    const State before = state();
    for (unsigned p : {0u, 5u, 64u, 4095u, 4096u, virq}) EXPECT_EQ(send(p), -XEN_EINVAL) << p;
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, CloseOfAClosedReservedOrInvalidPortIsEinval)
{
    const State before = state();
    for (unsigned p : {0u, 7u, 64u, 100000u}) {
        evtchn_close_t c{p};
        EXPECT_EQ(op(EVTCHNOP_close, c), -XEN_EINVAL) << p;
    }
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, StatusRefusals)
{
    ASSERT_NE(second_domain(), nullptr);
    const State before = state();
    evtchn_status_t s{};
    s.dom = 9;
    EXPECT_EQ(op(EVTCHNOP_status, s), -XEN_ESRCH);
    s.dom = 2;
    EXPECT_EQ(op(EVTCHNOP_status, s), -XEN_EPERM);
    s.dom = DOMID_SELF;
    s.port = 64;   // past the valid bucket
    EXPECT_EQ(op(EVTCHNOP_status, s), -XEN_EINVAL);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, BindVcpuRefusals)
{
    const unsigned timer = bind_virq(VIRQ_TIMER, 0);
    const unsigned ipi = bind_ipi(0);
    const unsigned unbound = alloc_unbound();
    const State before = state();
    evtchn_bind_vcpu_t b{unbound, 2};
    EXPECT_EQ(op(EVTCHNOP_bind_vcpu, b), -XEN_ENOENT);
    for (unsigned p : {0u, 9u, 64u, timer, ipi}) {   // reserved, closed, invalid, per-vCPU VIRQ, IPI
        b = {p, 1};
        EXPECT_EQ(op(EVTCHNOP_bind_vcpu, b), -XEN_EINVAL) << p;
    }
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, UnmaskOfAnInvalidPortIsEinval)
{
    const State before = state();
    evtchn_unmask_t u{64};
    EXPECT_EQ(op(EVTCHNOP_unmask, u), -XEN_EINVAL);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, ResetOfNoDomainIsEsrchOfAnotherEperm)
{
    ASSERT_NE(second_domain(), nullptr);
    bind_ipi(0);
    const State before = state();
    evtchn_reset_t r{9};
    EXPECT_EQ(op(EVTCHNOP_reset, r), -XEN_ESRCH);
    r.dom = 2;
    EXPECT_EQ(op(EVTCHNOP_reset, r), -XEN_EPERM);
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, SetPriorityIsEinvalForABadPortEnosysOtherwise)
{
    const unsigned p = bind_ipi(0);
    const State before = state();
    evtchn_set_priority_t s{64, 0};
    EXPECT_EQ(op(EVTCHNOP_set_priority, s), -XEN_EINVAL);
    s.port = p;
    EXPECT_EQ(op(EVTCHNOP_set_priority, s), -XEN_ENOSYS);   // 2-level has no priorities
    EXPECT_TRUE(same(before));
}

TEST_F(EvtchnOp, BindInterdomainRefusals)
{
    Domain* d2 = second_domain();
    ASSERT_NE(d2, nullptr);
    const unsigned ipi = bind_ipi(0);
    const unsigned for_two = alloc_unbound(2);
    evtchn_bind_interdomain_t b{9, 1, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_interdomain, b), -XEN_ESRCH);
    const State before = state();
    for (unsigned p : {0u, 9u, 64u, ipi, for_two}) {   // not unbound, or unbound for another domain
        b = {DOMID_SELF, p, 0};
        EXPECT_EQ(op(EVTCHNOP_bind_interdomain, b), -XEN_EINVAL) << p;
    }
    b = {2, 1, 0};   // domain 2 has no event channels
    EXPECT_EQ(op(EVTCHNOP_bind_interdomain, b), -XEN_EINVAL);
    EXPECT_TRUE(same(before));
}

// --- done -----------------------------------------------------------------------

TEST_F(EvtchnOp, AllocUnboundTakesTheLowestFreePortAfterTheReservedZero)
{
    const unsigned p = alloc_unbound();
    EXPECT_EQ(p, 1u);
    const evtchn_status_t s = status(p);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, kDom);   // DOMID_SELF is recorded as the caller's id
    EXPECT_EQ(s.vcpu, 0u);
    EXPECT_EQ(status(0).status, uint32_t(EVTCHNSTAT_closed));
    EXPECT_EQ(alloc_unbound(7), 2u);
    EXPECT_EQ(status(2).u.unbound.dom, 7);
}

TEST_F(EvtchnOp, PortsBecomeValidABucketAtATime)
{
    evtchn_unmask_t u{64};
    EXPECT_EQ(op(EVTCHNOP_unmask, u), -XEN_EINVAL);
    for (unsigned i = 1; i <= 64; ++i) bind_ipi(0);
    EXPECT_EQ(op(EVTCHNOP_unmask, u), 0);
    u.port = 127;
    EXPECT_EQ(op(EVTCHNOP_unmask, u), 0);
    u.port = 128;
    EXPECT_EQ(op(EVTCHNOP_unmask, u), -XEN_EINVAL);
}

TEST_F(EvtchnOp, SendOnAnIpiRaisesItsVcpuInXensOrder)
{
    const unsigned p = bind_ipi(1);
    ASSERT_EQ(send(p), 0);
    EXPECT_TRUE(pending(p));
    EXPECT_TRUE(selected(1, p));
    EXPECT_EQ(info(1).evtchn_upcall_pending, 1);
    EXPECT_EQ(info(0).evtchn_upcall_pending, 0);
    EXPECT_EQ(out.kicks.vcpus, 2u);   // vCPU 1 only
    // Pending already: one event, no second kick.
    ASSERT_EQ(send(p), 0);
    EXPECT_EQ(out.kicks.vcpus, 0u);
}

TEST_F(EvtchnOp, AnUpcallAlreadyPendingIsNotKickedAgain)
{
    const unsigned a = bind_ipi(0), b = bind_ipi(0);
    ASSERT_EQ(send(a), 0);
    EXPECT_TRUE(out.kicks.has(0));
    ASSERT_EQ(send(b), 0);
    EXPECT_TRUE(pending(b));
    EXPECT_EQ(out.kicks.vcpus, 0u);
}

TEST_F(EvtchnOp, AMaskedPortIsOnlyMarkedPendingUntilUnmasked)
{
    const unsigned p = bind_ipi(0);
    mask(p);
    ASSERT_EQ(send(p), 0);
    EXPECT_TRUE(pending(p));
    EXPECT_FALSE(selected(0, p));
    EXPECT_EQ(info(0).evtchn_upcall_pending, 0);
    EXPECT_EQ(out.kicks.vcpus, 0u);
    evtchn_unmask_t u{p};
    ASSERT_EQ(op(EVTCHNOP_unmask, u), 0);
    EXPECT_TRUE(selected(0, p));
    EXPECT_EQ(info(0).evtchn_upcall_pending, 1);
    EXPECT_TRUE(out.kicks.has(0));
    EXPECT_EQ(shared->evtchn_mask[0], 0u);
}

TEST_F(EvtchnOp, UnmaskOfAPortNotPendingOnlyClearsTheMask)
{
    const unsigned p = bind_ipi(0);
    mask(p);
    evtchn_unmask_t u{p};
    ASSERT_EQ(op(EVTCHNOP_unmask, u), 0);
    EXPECT_EQ(shared->evtchn_mask[0], 0u);
    EXPECT_EQ(info(0).evtchn_pending_sel, 0u);
    EXPECT_EQ(out.kicks.vcpus, 0u);
}

TEST_F(EvtchnOp, SendOnAnUnboundPortIsDropped)
{
    const unsigned p = alloc_unbound();
    EXPECT_EQ(send(p), 0);
    EXPECT_FALSE(pending(p));
}

TEST_F(EvtchnOp, LocalInterdomainConnectsBothEndsAndRaisesTheNewOne)
{
    const unsigned a = alloc_unbound();
    evtchn_bind_interdomain_t b{DOMID_SELF, a, 0};
    ASSERT_EQ(op(EVTCHNOP_bind_interdomain, b), 0);
    const unsigned l = b.local_port;
    EXPECT_NE(l, a);
    EXPECT_TRUE(pending(l));   // Xen makes up for an event lost while unbound
    EXPECT_FALSE(pending(a));
    evtchn_status_t s = status(l);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_interdomain));
    EXPECT_EQ(s.u.interdomain.dom, kDom);
    EXPECT_EQ(s.u.interdomain.port, a);
    EXPECT_EQ(status(a).u.interdomain.port, l);
    ASSERT_EQ(send(l), 0);   // each end raises the other
    EXPECT_TRUE(pending(a));
}

TEST_F(EvtchnOp, BindVirqPerVcpuAndGlobal)
{
    const unsigned t0 = bind_virq(VIRQ_TIMER, 0), t1 = bind_virq(VIRQ_TIMER, 1);
    EXPECT_NE(t0, t1);
    const evtchn_status_t s = status(t1);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_virq));
    EXPECT_EQ(s.u.virq, uint32_t(VIRQ_TIMER));
    EXPECT_EQ(s.vcpu, 1u);
    const unsigned con = bind_virq(VIRQ_CONSOLE, 0);
    evtchn_bind_vcpu_t bv{con, 1};   // a global VIRQ may move
    ASSERT_EQ(op(EVTCHNOP_bind_vcpu, bv), 0);
    const Kicks k = send_virq(hv(), *d, 0, VIRQ_CONSOLE);
    EXPECT_TRUE(pending(con));
    EXPECT_TRUE(k.has(1));
    EXPECT_EQ(send_virq(hv(), *d, 1, VIRQ_DEBUG).vcpus, 0u);   // unbound: nothing
}

TEST_F(EvtchnOp, CloseFreesTheBindingAndClearsPending)
{
    const unsigned t = bind_virq(VIRQ_TIMER, 1);
    ASSERT_EQ(send_virq(hv(), *d, 1, VIRQ_TIMER).vcpus, 2u);
    ASSERT_TRUE(pending(t));
    evtchn_close_t c{t};
    ASSERT_EQ(op(EVTCHNOP_close, c), 0);
    EXPECT_FALSE(pending(t));
    EXPECT_EQ(status(t).status, uint32_t(EVTCHNSTAT_closed));
    EXPECT_EQ(bind_virq(VIRQ_TIMER, 1), t);   // the VIRQ binds again, on the freed port
}

TEST_F(EvtchnOp, ClosingAGlobalVirqMovedToAnotherVcpuFreesItsBinding)
{
    const unsigned con = bind_virq(VIRQ_CONSOLE, 0);
    evtchn_bind_vcpu_t bv{con, 1};
    ASSERT_EQ(op(EVTCHNOP_bind_vcpu, bv), 0);
    evtchn_close_t c{con};
    ASSERT_EQ(op(EVTCHNOP_close, c), 0);
    evtchn_bind_virq_t b{VIRQ_CONSOLE, 0, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_virq, b), 0);
}

TEST_F(EvtchnOp, ClosingOneInterdomainEndLeavesTheOtherUnbound)
{
    const unsigned a = alloc_unbound();
    evtchn_bind_interdomain_t b{DOMID_SELF, a, 0};
    ASSERT_EQ(op(EVTCHNOP_bind_interdomain, b), 0);
    evtchn_close_t c{b.local_port};
    ASSERT_EQ(op(EVTCHNOP_close, c), 0);
    const evtchn_status_t s = status(a);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, kDom);
    EXPECT_EQ(send(a), 0);   // unbound again: dropped
    EXPECT_FALSE(pending(a));
}

TEST_F(EvtchnOp, BindVcpuMovesWhereAnUnboundPortNotifies)
{
    const unsigned a = alloc_unbound();
    evtchn_bind_vcpu_t bv{a, 1};
    ASSERT_EQ(op(EVTCHNOP_bind_vcpu, bv), 0);
    EXPECT_EQ(status(a).vcpu, 1u);
}

TEST_F(EvtchnOp, ResetClosesEveryPortButThePlatformsOwn)
{
    const unsigned console = unsigned(bind_platform_port(hv(), *d));
    const unsigned ipi = bind_ipi(1), t = bind_virq(VIRQ_TIMER, 0);
    ASSERT_EQ(send(ipi), 0);
    evtchn_reset_t r{DOMID_SELF};
    ASSERT_EQ(op(EVTCHNOP_reset, r), 0);
    EXPECT_EQ(status(ipi).status, uint32_t(EVTCHNSTAT_closed));
    EXPECT_EQ(status(t).status, uint32_t(EVTCHNSTAT_closed));
    EXPECT_FALSE(pending(ipi));
    EXPECT_EQ(status(console).status, uint32_t(EVTCHNSTAT_interdomain));
    EXPECT_EQ(bind_virq(VIRQ_TIMER, 0), ipi);   // the lowest free port again
}

TEST_F(EvtchnOp, APlatformPortReportsSendsAndCannotBeClosed)
{
    const int p = bind_platform_port(hv(), *d);
    ASSERT_GT(p, 0);
    ASSERT_EQ(send(unsigned(p)), 0);
    EXPECT_EQ(out.platform_port, unsigned(p));
    EXPECT_FALSE(pending(unsigned(p)));
    evtchn_close_t c{unsigned(p)};
    EXPECT_EQ(op(EVTCHNOP_close, c), -XEN_EINVAL);
    evtchn_bind_vcpu_t bv{unsigned(p), 1};
    EXPECT_EQ(op(EVTCHNOP_bind_vcpu, bv), -XEN_EINVAL);
    EXPECT_TRUE(platform_raise(hv(), *d, unsigned(p)).has(0));
    EXPECT_TRUE(pending(unsigned(p)));
    EXPECT_EQ(platform_raise(hv(), *d, 9).vcpus, 0u);   // not the platform's: ignored
}

TEST_F(EvtchnOp, ARegisteredVcpuInfoTakesTheVcpusBits)
{
    vcpu_info_t own{};
    set_event_vcpu_info(*ev, 1, &own);
    const unsigned p = bind_ipi(1);
    ASSERT_EQ(send(p), 0);
    EXPECT_EQ(own.evtchn_upcall_pending, 1);
    EXPECT_EQ(info(1).evtchn_upcall_pending, 0);
}

} // namespace
} // namespace pvmmu::test
