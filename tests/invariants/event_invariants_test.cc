// The event-state checker (core/event_invariants.h) holds on states the
// sub-ops build and is shown to catch each broken rule: a raise done in the
// wrong order, with a guest consuming in between, loses an event, and the
// checker names it; so does each corruption a core bug could leave.
#include "core/event_invariants.h"
#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

class EventInvariants : public EventTest {
protected:
    void SetUp() override
    {
        EventTest::SetUp();
        ipi0 = bind_ipi(0);
        ipi1 = bind_ipi(1);
        timer = bind_virq(VIRQ_TIMER, 1);
        const unsigned a = alloc_unbound();
        evtchn_bind_interdomain_t b{DOMID_SELF, a, 0};
        EXPECT_EQ(op(EVTCHNOP_bind_interdomain, b), 0);
        EXPECT_EQ(guest_consume(0), 1u);   // the new local end, raised by the bind
        EXPECT_EQ(send(ipi1), 0);
        ASSERT_TRUE(holds());   // every corruption starts from a valid state
    }
    bool holds()
    {
        InvariantReport r;
        return check_event_invariants(*d, r);
    }
    ::testing::AssertionResult broken(const std::string& reason)
    {
        InvariantReport r;
        if (check_event_invariants(*d, r)) return ::testing::AssertionFailure() << "the checker passed";
        for (unsigned i = 0; i < r.kept(); ++i)
            if (r[i].reason == reason) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "first violation: " << r[0].reason;
    }
    // What Linux's upcall does with vCPU `id`'s bits: takes the flag, then the
    // selector, then each selected word's unmasked pending ports bound to it.
    unsigned guest_consume(unsigned id)
    {
        vcpu_info_t& vi = info(id);
        __atomic_exchange_n(&vi.evtchn_upcall_pending, uint8_t(0), __ATOMIC_SEQ_CST);
        xen_ulong_t sel = __atomic_exchange_n(&vi.evtchn_pending_sel, xen_ulong_t(0), __ATOMIC_SEQ_CST);
        unsigned taken = 0;
        while (sel) {
            const unsigned w = unsigned(__builtin_ctzl(sel));
            sel &= sel - 1;
            xen_ulong_t bits = shared->evtchn_pending[w] & ~shared->evtchn_mask[w];
            while (bits) {
                const unsigned b = unsigned(__builtin_ctzl(bits));
                bits &= bits - 1;
                if (ev->ports[w * 64 + b].vcpu != id) continue;   // another vCPU's (Linux: its per-CPU mask)
                __atomic_fetch_and(&shared->evtchn_pending[w], ~(xen_ulong_t(1) << b), __ATOMIC_SEQ_CST);
                ++taken;
            }
        }
        return taken;
    }
    unsigned ipi0 = 0, ipi1 = 0, timer = 0;
};

TEST_F(EventInvariants, HoldAfterEverySubOpAndAGuestsConsumption)
{
    EXPECT_EQ(guest_consume(1), 1u);
    EXPECT_TRUE(holds());
    mask(ipi0);
    ASSERT_EQ(send(ipi0), 0);
    EXPECT_TRUE(holds());
    evtchn_close_t c{ipi0};
    ASSERT_EQ(op(EVTCHNOP_close, c), 0);
    EXPECT_TRUE(holds());
}

// The same interleaving twice: a guest consumes vCPU 0's bits while port
// ipi0 is raised. Raised in the wrong order (upcall and selector first, the
// port last), the port ends pending with nothing pointing at it: lost.
TEST_F(EventInvariants, ARaiseInTheWrongOrderLosesAnEventAndIsCaught)
{
    vcpu_info_t& vi = info(0);
    __atomic_fetch_or(&vi.evtchn_pending_sel, xen_ulong_t(1) << (ipi0 / 64), __ATOMIC_SEQ_CST);
    __atomic_exchange_n(&vi.evtchn_upcall_pending, uint8_t(1), __ATOMIC_SEQ_CST);
    EXPECT_EQ(guest_consume(0), 0u);   // the guest runs here: nothing pending yet
    __atomic_fetch_or(&shared->evtchn_pending[ipi0 / 64], xen_ulong_t(1) << (ipi0 % 64), __ATOMIC_SEQ_CST);
    EXPECT_TRUE(broken("event lost: pending and unmasked, selector bit clear"));
}

TEST_F(EventInvariants, TheRightOrderUnderTheSameInterleavingLosesNothing)
{
    __atomic_fetch_or(&shared->evtchn_pending[ipi0 / 64], xen_ulong_t(1) << (ipi0 % 64), __ATOMIC_SEQ_CST);
    EXPECT_EQ(guest_consume(0), 0u);   // the guest runs here: no selector yet
    __atomic_fetch_or(&info(0).evtchn_pending_sel, xen_ulong_t(1) << (ipi0 / 64), __ATOMIC_SEQ_CST);
    __atomic_exchange_n(&info(0).evtchn_upcall_pending, uint8_t(1), __ATOMIC_SEQ_CST);
    EXPECT_TRUE(holds());
    EXPECT_EQ(guest_consume(0), 1u);
    EXPECT_TRUE(holds());
}

TEST_F(EventInvariants, SelectorWithoutUpcall)
{
    info(1).evtchn_upcall_pending = 0;
    EXPECT_TRUE(broken("event lost: selector set, no upcall pending"));
}

TEST_F(EventInvariants, PendingOnAClosedPort)
{
    shared->evtchn_pending[0] |= 1ul << 40;
    EXPECT_TRUE(broken("event pending on a closed port"));
}

TEST_F(EventInvariants, BlockedWithAnUpcallDue)
{
    ev->vcpu[1].blocked = true;
    EXPECT_TRUE(broken("wake-up lost: blocked with an upcall due"));
}

TEST_F(EventInvariants, VirqBindingToAnotherPort)
{
    ev->vcpu[1].virq_port[VIRQ_DEBUG] = uint16_t(timer);
    EXPECT_TRUE(broken("VIRQ binding names a port not bound to it"));
}

TEST_F(EventInvariants, InterdomainEndsDisagree)
{
    for (Port& p : ev->ports)
        if (p.state == PortState::Interdomain) {
            p.remote_port = uint16_t(ipi0);
            break;
        }
    EXPECT_TRUE(broken("interdomain ends disagree"));
}

TEST_F(EventInvariants, PortNotifyingNoVcpu)
{
    ev->ports[ipi0].vcpu = 7;
    EXPECT_TRUE(broken("port notifies no vCPU of the domain"));
}

} // namespace
} // namespace pvmmu::test
