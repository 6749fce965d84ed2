// The event-state checker under the FIFO ABI (core/src/event_fifo_invariants.cc)
// holds on the states the sub-ops and a consuming guest leave, and names
// each way an event can be lost: an unmasked pending event not linked, a
// linked one no queue reaches, a READY queue without its upcall, an event
// kept for a page that exists.
#include "core/event_invariants.h"
#include "support/fifo_fixture.h"

namespace pvmmu::test {
namespace {

class FifoInvariants : public FifoTest {
protected:
    void SetUp() override
    {
        FifoTest::SetUp();
        switch_to_fifo();
        a = unmasked_ipi(0);
        b = unmasked_ipi(0);
        c = unmasked_ipi(1);
        EXPECT_EQ(send(a), 0);
        EXPECT_EQ(send(b), 0);
        EXPECT_EQ(send(c), 0);
        ASSERT_TRUE(holds());
    }
    bool holds()
    {
        InvariantReport r;
        const bool ok = check_event_invariants(*d, r);
        if (!ok) ADD_FAILURE() << r[0].reason << " at " << r[0].index;
        return ok;
    }
    ::testing::AssertionResult broken(const std::string& reason)
    {
        InvariantReport r;
        if (check_event_invariants(*d, r)) return ::testing::AssertionFailure() << "the checker passed";
        for (unsigned i = 0; i < r.kept(); ++i)
            if (r[i].reason == reason) return ::testing::AssertionSuccess();
        return ::testing::AssertionFailure() << "first violation: " << r[0].reason;
    }
    event_word_t& w(unsigned port) { return page(0)[port]; }
    unsigned a = 0, b = 0, c = 0;
};

TEST_F(FifoInvariants, HoldWhileTheGuestConsumesAndMasks)
{
    guest(0).mask(b);
    unsigned n = guest(0).handle_events([](unsigned) {});
    EXPECT_EQ(n, 1u);   // a; b masked
    info(0).evtchn_upcall_pending = 0;
    EXPECT_TRUE(holds());
    EXPECT_EQ(unmask_call(b), 0);
    EXPECT_TRUE(holds());
    EXPECT_EQ(guest(0).handle_events([](unsigned) {}), 1u);
    EXPECT_EQ(guest(1).handle_events([](unsigned) {}), 1u);
    info(0).evtchn_upcall_pending = info(1).evtchn_upcall_pending = 0;
    EXPECT_TRUE(holds());
    EXPECT_EQ(port_close(a), 0);
    EXPECT_TRUE(holds());
}

TEST_F(FifoInvariants, CatchesAnUnlinkedPendingEvent)
{
    // What a raise that forgot to link would leave: b pending, not linked,
    // and a's LINK no longer leading to it.
    w(a) = kFifoPending | kFifoLinked;
    w(b) = kFifoPending;
    EXPECT_TRUE(broken("event lost: pending and unmasked, not linked"));
}

TEST_F(FifoInvariants, CatchesALinkedEventNoQueueReaches)
{
    w(a) = kFifoPending | kFifoLinked;   // the chain ends before b
    EXPECT_TRUE(broken("event lost: linked on no READY queue's walk from HEAD"));
}

TEST_F(FifoInvariants, CatchesAReadyQueueWithoutItsUpcall)
{
    info(1).evtchn_upcall_pending = 0;
    EXPECT_TRUE(broken("event lost: a queue READY, no upcall pending"));
}

TEST_F(FifoInvariants, CatchesAQueueNotMarkedReady)
{
    block(0)->ready = 0;
    EXPECT_TRUE(broken("event lost: linked on no READY queue's walk from HEAD"));
}

TEST_F(FifoInvariants, CatchesAnEventKeptForAPageThatExists)
{
    ev->ports[a].fifo_pending = true;
    EXPECT_TRUE(broken("event lost: kept for an event array page that exists"));
}

TEST_F(FifoInvariants, CatchesAnEventOnAClosedPort)
{
    const unsigned p = bind_ipi(0);
    ASSERT_EQ(port_close(p), 0);
    w(p) |= kFifoPending;
    EXPECT_TRUE(broken("event pending on a closed port"));
}

TEST_F(FifoInvariants, AGuestsCyclicLinksEndTheWalk)
{
    w(b) = kFifoPending | kFifoLinked | a;   // b links back to a
    EXPECT_TRUE(holds());
}

} // namespace
} // namespace pvmmu::test
