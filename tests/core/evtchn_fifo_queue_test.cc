// The FIFO ABI's queues (core/src/evtchn_fifo.cc) as a guest sees them: a
// raise links the event at its queue's tail, an empty queue gets HEAD, its
// READY bit and the upcall (the same evtchn_upcall_pending and kick as
// 2-level); the guest's consumer (support/fifo_guest.h, as Linux's) takes
// events in order, highest priority first; a masked event waits for its
// unmask; an event follows its port to another vCPU or priority.
#include "support/fifo_fixture.h"

namespace pvmmu::test {
namespace {

constexpr unsigned kDefault = EVTCHN_FIFO_PRIORITY_DEFAULT;

class FifoQueue : public FifoTest {
protected:
    void SetUp() override
    {
        FifoTest::SetUp();
        switch_to_fifo();
    }
    std::vector<unsigned> consume(unsigned vcpu)
    {
        std::vector<unsigned> seen;
        FifoGuest g = guest(vcpu);
        g.handle_events([&](unsigned p) { seen.push_back(p); });
        EXPECT_EQ(g.bad_heads, 0u);
        return seen;
    }
};

TEST_F(FifoQueue, EventsAreLinkedInOrderAndTheFirstRaisesTheUpcall)
{
    const unsigned a = unmasked_ipi(0), b = unmasked_ipi(0), c = unmasked_ipi(0);
    EXPECT_EQ(send(a), 0);
    EXPECT_EQ(block(0)->head[kDefault], a);
    EXPECT_EQ(block(0)->ready, 1u << kDefault);
    EXPECT_EQ(info(0).evtchn_upcall_pending, 1);
    EXPECT_TRUE(out.kicks.has(0));
    EXPECT_EQ(word(a), kFifoPending | kFifoLinked);
    EXPECT_EQ(send(b), 0);
    EXPECT_FALSE(out.kicks.has(0));   // the queue was not empty: no new upcall
    EXPECT_EQ(word(a), kFifoPending | kFifoLinked | b);
    EXPECT_EQ(send(c), 0);
    EXPECT_EQ(word(b), kFifoPending | kFifoLinked | c);
    EXPECT_EQ(send(b), 0);   // pending already: one event
    EXPECT_EQ(consume(0), (std::vector<unsigned>{a, b, c}));
    EXPECT_EQ(block(0)->ready, 0u);
    EXPECT_EQ(word(a), 0u);
    EXPECT_EQ(word(c), 0u);
    // No 2-level bit is touched.
    EXPECT_FALSE(pending(a));
    EXPECT_EQ(info(0).evtchn_pending_sel, 0u);
}

TEST_F(FifoQueue, AnEmptiedQueueStartsAgainAtHead)
{
    const unsigned a = unmasked_ipi(0), b = unmasked_ipi(0);
    EXPECT_EQ(send(a), 0);
    EXPECT_EQ(consume(0), std::vector<unsigned>{a});
    info(0).evtchn_upcall_pending = 0;
    EXPECT_EQ(send(b), 0);   // the tail (a) is no longer linked: b is the new HEAD
    EXPECT_EQ(block(0)->head[kDefault], b);
    EXPECT_EQ(word(a), 0u);
    EXPECT_EQ(info(0).evtchn_upcall_pending, 1);
    EXPECT_EQ(send(a), 0);
    EXPECT_EQ(consume(0), (std::vector<unsigned>{b, a}));
}

TEST_F(FifoQueue, HigherPriorityIsConsumedFirst)
{
    const unsigned low = unmasked_ipi(0), high = unmasked_ipi(0), top = unmasked_ipi(0);
    ASSERT_EQ(set_priority(high, 3), 0);
    ASSERT_EQ(set_priority(top, EVTCHN_FIFO_PRIORITY_MAX), 0);
    EXPECT_EQ(send(low), 0);
    EXPECT_EQ(send(high), 0);
    EXPECT_EQ(send(top), 0);
    EXPECT_EQ(block(0)->ready, (1u << kDefault) | (1u << 3) | 1u);
    EXPECT_EQ(block(0)->head[3], high);
    EXPECT_EQ(consume(0), (std::vector<unsigned>{top, high, low}));
}

TEST_F(FifoQueue, AMaskedEventWaitsForItsUnmask)
{
    const unsigned p = bind_ipi(0);   // masked, as the guest's new page left it
    EXPECT_EQ(send(p), 0);
    EXPECT_EQ(word(p), kFifoMasked | kFifoPending);
    EXPECT_EQ(block(0)->ready, 0u);
    EXPECT_EQ(info(0).evtchn_upcall_pending, 0);
    EXPECT_FALSE(guest(0).unmask_local(p));   // pending: the guest must ask
    EXPECT_EQ(unmask_call(p), 0);
    EXPECT_EQ(word(p), kFifoPending | kFifoLinked);
    EXPECT_EQ(info(0).evtchn_upcall_pending, 1);
    EXPECT_EQ(consume(0), std::vector<unsigned>{p});
    // Masked while linked: taken off the queue and not handled, still pending.
    EXPECT_EQ(send(p), 0);
    guest(0).mask(p);
    EXPECT_TRUE(consume(0).empty());
    EXPECT_EQ(word(p), kFifoMasked | kFifoPending);
    EXPECT_EQ(unmask_call(p), 0);
    EXPECT_EQ(consume(0), std::vector<unsigned>{p});
}

TEST_F(FifoQueue, EachVcpuHasItsOwnQueues)
{
    const unsigned p0 = unmasked_ipi(0), p1 = unmasked_ipi(1);
    EXPECT_EQ(send(p1), 0);
    EXPECT_TRUE(out.kicks.has(1));
    EXPECT_FALSE(out.kicks.has(0));
    EXPECT_EQ(block(1)->head[kDefault], p1);
    EXPECT_EQ(block(0)->ready, 0u);
    EXPECT_EQ(send(p0), 0);
    EXPECT_TRUE(consume(0) == std::vector<unsigned>{p0});
    EXPECT_TRUE(consume(1) == std::vector<unsigned>{p1});
}

TEST_F(FifoQueue, AVcpuWithoutAControlBlockGetsNoLinkAndNoUpcall)
{
    d->nr_vcpus = 3;   // a third vCPU that never made init_control
    const unsigned p = bind_ipi(2);
    EXPECT_TRUE(guest(0).unmask_local(p));
    EXPECT_EQ(send(p), 0);
    EXPECT_EQ(word(p), kFifoPending);
    EXPECT_FALSE(out.kicks.has(2));
    EXPECT_EQ(shared->vcpu_info[2].evtchn_upcall_pending, 0);
    d->nr_vcpus = 2;
}

TEST_F(FifoQueue, APortMovedToAnotherQueueEndsItsOldTail)
{
    // An interdomain pair within the domain: its ends may move (bind_vcpu).
    const unsigned a = alloc_unbound();
    evtchn_bind_interdomain_t b{DOMID_SELF, a, 0};
    ASSERT_EQ(op(EVTCHNOP_bind_interdomain, b), 0);
    ASSERT_TRUE(guest(0).unmask_local(a));
    if (!guest(0).unmask_local(b.local_port)) {
        ASSERT_EQ(unmask_call(b.local_port), 0);   // the bind raised it
    }
    (void)consume(0);
    const unsigned q = unmasked_ipi(0);
    EXPECT_EQ(send(b.local_port), 0);   // raises a on vCPU 0: a is the tail there
    EXPECT_EQ(consume(0), std::vector<unsigned>{a});
    evtchn_bind_vcpu_t mv{a, 1};
    ASSERT_EQ(op(EVTCHNOP_bind_vcpu, mv), 0);
    EXPECT_EQ(send(b.local_port), 0);   // a, linked on vCPU 1's queue now
    EXPECT_EQ(block(1)->head[kDefault], a);
    // vCPU 0's queue must not link after a any more: q is its new HEAD.
    EXPECT_EQ(send(q), 0);
    EXPECT_EQ(block(0)->head[kDefault], q);
    EXPECT_EQ(consume(1), std::vector<unsigned>{a});
    EXPECT_EQ(consume(0), std::vector<unsigned>{q});
}

TEST_F(FifoQueue, ANewPriorityTakesTheNextEventToItsQueue)
{
    const unsigned a = unmasked_ipi(0), b = unmasked_ipi(0);
    EXPECT_EQ(send(a), 0);
    EXPECT_EQ(send(b), 0);
    ASSERT_EQ(set_priority(b, 1), 0);   // b is linked already: it stays on queue 7
    EXPECT_EQ(consume(0), (std::vector<unsigned>{a, b}));
    info(0).evtchn_upcall_pending = 0;
    EXPECT_EQ(send(b), 0);   // now on queue 1, and queue 7 must not link after b
    EXPECT_EQ(block(0)->head[1], b);
    EXPECT_EQ(block(0)->ready, 1u << 1);
    EXPECT_EQ(send(a), 0);
    EXPECT_EQ(block(0)->head[kDefault], a);
    EXPECT_EQ(word(b), kFifoPending | kFifoLinked);   // no LINK to a
    EXPECT_EQ(consume(0), (std::vector<unsigned>{b, a}));
}

TEST_F(FifoQueue, ClosingClearsPendingAndPollSeesTheWord)
{
    const unsigned p = unmasked_ipi(0), q = unmasked_ipi(0);
    EXPECT_EQ(send(p), 0);
    EXPECT_TRUE(evtchn_is_pending(*ev, p));
    evtchn_port_t ports[1] = {p};
    sched_poll_t poll{};
    set_xen_guest_handle(poll.ports, ports);
    poll.nr_ports = 1;
    EventOut o;
    EXPECT_EQ(sched_op(hv(), v1(), SCHEDOP_poll, Vaddr{uint64_t(&poll)}, 0, o), 0);
    EXPECT_FALSE(o.block);   // pending: at once
    EXPECT_EQ(port_close(p), 0);
    EXPECT_EQ(word(p) & kFifoPending, 0u);
    EXPECT_FALSE(evtchn_is_pending(*ev, p));
    EXPECT_EQ(send(q), 0);
    EXPECT_EQ(consume(0), std::vector<unsigned>{q});   // p is skipped: no longer pending
}

TEST_F(FifoQueue, AGuestsLinksAreNeverFollowed)
{
    const unsigned a = unmasked_ipi(0), b = unmasked_ipi(0);
    EXPECT_EQ(send(a), 0);
    // The guest scribbles: a's LINK at a port beyond the array, HEAD anywhere.
    __atomic_store_n(&page(0)[a], kFifoPending | kFifoLinked | kFifoLinkMask, __ATOMIC_SEQ_CST);
    block(0)->head[kDefault] = 99999;
    EXPECT_EQ(send(b), 0);   // the hypervisor only rewrites a's LINK
    EXPECT_EQ(word(a), kFifoPending | kFifoLinked | b);
}

TEST_F(FifoQueue, APollerWakesOnAFifoEvent)
{
    const unsigned p = unmasked_ipi(0);
    evtchn_port_t ports[1] = {p};
    sched_poll_t poll{};
    set_xen_guest_handle(poll.ports, ports);
    poll.nr_ports = 1;
    EventOut o;
    ASSERT_EQ(sched_op(hv(), v1(), SCHEDOP_poll, Vaddr{uint64_t(&poll)}, 0, o), 0);
    ASSERT_TRUE(o.block);
    EXPECT_EQ(send(p), 0);
    EXPECT_TRUE(out.kicks.has(1));
    EXPECT_FALSE(vcpu_blocked(v1()));
}

} // namespace
} // namespace pvmmu::test
