// Interdomain event channels between two domains (core/src/evtchn_op.cc):
// alloc_unbound for another domain, bind_interdomain from it, send both
// ways, close on either side (the other end unbound again, as Xen), a
// domain's teardown closing its ends, and the EvtchnInterdomain policy.
#include <vector>

#include "core/domain_teardown.h"
#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

class EvtchnInterdomain : public EventTest {
protected:
    void SetUp() override
    {
        EventTest::SetUp();
        d2 = second_domain_with_events();
        ASSERT_NE(d2, nullptr);
    }

    template <class T>
    long op2(unsigned cmd, T& arg)
    {
        out2 = EventOut{};
        return evtchn_op(hv(), d2->vcpus[0], cmd, Vaddr{uint64_t(&arg)}, out2);
    }
    evtchn_status_t status2(unsigned port)
    {
        evtchn_status_t s{};
        s.dom = DOMID_SELF;
        s.port = port;
        EXPECT_EQ(op2(EVTCHNOP_status, s), 0);
        return s;
    }
    bool pending2(unsigned port) const { return (shared2->evtchn_pending[port / 64] >> (port % 64)) & 1; }

    // Domain 1's port `a` offered to domain 2, bound from it: returns domain 2's end.
    unsigned connect(unsigned& a)
    {
        a = alloc_unbound(2);
        evtchn_bind_interdomain_t b{kDom, a, 0};
        EXPECT_EQ(op2(EVTCHNOP_bind_interdomain, b), 0);
        return b.local_port;
    }

    // Both domains' port tables and bitmaps, to show a refused sub-op changed nothing.
    std::vector<uint8_t> state() const
    {
        std::vector<uint8_t> s;
        for (const DomainEvents* e : {ev.get(), ev2.get()}) {
            const auto* p = reinterpret_cast<const uint8_t*>(e->ports);
            s.insert(s.end(), p, p + sizeof(e->ports));
            s.push_back(uint8_t(e->valid));
        }
        for (const shared_info_t* sh : {shared.get(), shared2.get()}) {
            const auto* p = reinterpret_cast<const uint8_t*>(sh);
            s.insert(s.end(), p, p + sizeof(*sh));
        }
        return s;
    }
    bool same(const std::vector<uint8_t>& before) const { return state() == before; }

    Domain* d2 = nullptr;
    EventOut out2;
};

TEST_F(EvtchnInterdomain, BindConnectsBothEndsAcrossDomainsAndRaisesTheNewOne)
{
    unsigned a = 0;
    const unsigned l = connect(a);
    EXPECT_TRUE(pending2(l));
    evtchn_status_t s = status(a);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_interdomain));
    EXPECT_EQ(s.u.interdomain.dom, 2);
    EXPECT_EQ(s.u.interdomain.port, l);
    s = status2(l);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_interdomain));
    EXPECT_EQ(s.u.interdomain.dom, kDom);
    EXPECT_EQ(s.u.interdomain.port, a);
}

TEST_F(EvtchnInterdomain, SendGoesBothWaysAndKicksTheOtherDomain)
{
    unsigned a = 0;
    const unsigned l = connect(a);
    shared2->evtchn_pending[l / 64] = 0;
    shared2->vcpu_info[0].evtchn_upcall_pending = 0;
    shared2->vcpu_info[0].evtchn_pending_sel = 0;
    ASSERT_EQ(send(a), 0);
    EXPECT_TRUE(pending2(l));
    EXPECT_EQ(out.remote_dom, 2);
    EXPECT_TRUE(out.remote_kicks.has(0));
    EXPECT_EQ(out.kicks.vcpus, 0u);
    EXPECT_FALSE(pending(a));
    evtchn_send_t sd{l};
    ASSERT_EQ(op2(EVTCHNOP_send, sd), 0);
    EXPECT_TRUE(pending(a));
    EXPECT_EQ(out2.remote_dom, kDom);
}

TEST_F(EvtchnInterdomain, ClosingEitherEndLeavesTheOtherUnboundForTheCloser)
{
    unsigned a = 0;
    unsigned l = connect(a);
    evtchn_close_t c{l};
    ASSERT_EQ(op2(EVTCHNOP_close, c), 0);
    evtchn_status_t s = status(a);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, 2);
    EXPECT_EQ(status2(l).status, uint32_t(EVTCHNSTAT_closed));
    EXPECT_EQ(send(a), 0);   // nobody listens: dropped, as Xen
    // Domain 2 binds again; then domain 1 closes its end.
    evtchn_bind_interdomain_t b{kDom, a, 0};
    ASSERT_EQ(op2(EVTCHNOP_bind_interdomain, b), 0);
    l = b.local_port;
    c = {a};
    ASSERT_EQ(op(EVTCHNOP_close, c), 0);
    s = status2(l);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, kDom);
    EXPECT_EQ(status(a).status, uint32_t(EVTCHNSTAT_closed));
}

TEST_F(EvtchnInterdomain, BindingAPortNotOfferedToTheCallerIsRefusedAndChangesNothing)
{
    const unsigned for_three = alloc_unbound(3);
    const unsigned ipi = bind_ipi(0);
    const auto before = state();
    for (unsigned p : {for_three, ipi, 0u, 4095u}) {
        evtchn_bind_interdomain_t b{kDom, p, 0};
        EXPECT_EQ(op2(EVTCHNOP_bind_interdomain, b), -XEN_EINVAL) << p;
    }
    evtchn_bind_interdomain_t b{9, 1, 0};
    EXPECT_EQ(op2(EVTCHNOP_bind_interdomain, b), -XEN_ESRCH);
    EXPECT_TRUE(same(before));
    EXPECT_EQ(status2(1).status, uint32_t(EVTCHNSTAT_closed));
}

TEST_F(EvtchnInterdomain, PolicyDecidesWhichDomainsMayOpenChannelsToOthers)
{
    d->policy.deny(Perm::EvtchnInterdomain);
    evtchn_alloc_unbound_t a{DOMID_SELF, 2, 0};
    EXPECT_EQ(op(EVTCHNOP_alloc_unbound, a), -XEN_EPERM);
    alloc_unbound(DOMID_SELF);   // a channel within the domain stays allowed
    const unsigned offered = alloc_unbound_in(*d2, kDom);
    evtchn_bind_interdomain_t b{2, offered, 0};
    EXPECT_EQ(op(EVTCHNOP_bind_interdomain, b), -XEN_EPERM);
    EXPECT_EQ(status2(offered).status, uint32_t(EVTCHNSTAT_unbound));
}

TEST_F(EvtchnInterdomain, ADomainsTeardownClosesItsEndsAndLeavesThePeersUnbound)
{
    unsigned a = 0;
    connect(a);
    const unsigned offered = alloc_unbound_in(*d2, kDom);
    (void)relinquish_domain(hv(), *d2);
    evtchn_status_t s = status(a);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, 2);
    EXPECT_EQ(send(a), 0);
    // Nothing of the dead domain can be bound any more.
    evtchn_bind_interdomain_t b{2, offered, 0};
    const long rc = op(EVTCHNOP_bind_interdomain, b);
    EXPECT_TRUE(rc == -XEN_EINVAL || rc == -XEN_ESRCH) << rc;
}

TEST_F(EvtchnInterdomain, TheLowerDomainsTeardownLeavesTheHigherOnesEndUnbound)
{
    unsigned a = 0;
    const unsigned l = connect(a);
    (void)relinquish_domain(hv(), *d);
    const evtchn_status_t s = status2(l);
    EXPECT_EQ(s.status, uint32_t(EVTCHNSTAT_unbound));
    EXPECT_EQ(s.u.unbound.dom, kDom);
    evtchn_send_t sd{l};
    EXPECT_EQ(op2(EVTCHNOP_send, sd), 0);   // dropped
}

} // namespace
} // namespace pvmmu::test
