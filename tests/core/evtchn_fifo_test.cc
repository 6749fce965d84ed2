// The FIFO event ABI's sub-ops (core/src/evtchn_fifo_op.cc): each errno of
// EVTCHNOP_init_control, expand_array and set_priority as Xen 4.17 answers
// them, with nothing changed (no switch to FIFO, no frame reference kept);
// the switch from 2-level and back (EVTCHNOP_reset); the frames held, as
// the invariant checker recounts them. The queue protocol itself is
// evtchn_fifo_queue_test.cc's.
#include "core/domain_teardown.h"
#include "core/invariants.h"
#include "support/fifo_fixture.h"

namespace pvmmu::test {
namespace {

class FifoOps : public FifoTest {
protected:
    bool frames_consistent()
    {
        std::vector<FrameTally> scratch(kMachineFrames);
        InvariantReport r;
        const bool ok = check_invariants(hv(), TallySpan{scratch.data(), scratch.size()}, r);
        if (!ok) ADD_FAILURE() << r[0].reason << " at mfn " << r[0].frame.v;
        return ok;
    }
    uint64_t counts(uint64_t mfn) { return uint64_t(frame(Mfn{mfn}).count.load()) << 32 | frame(Mfn{mfn}).type_count(); }
};

constexpr uint32_t kLastOffset = uint32_t(kPageSize - sizeof(evtchn_fifo_control_block_t));   // 4024

TEST_F(FifoOps, InitControlRefusalsChangeNothing)
{
    const uint64_t before = counts(block_mfn(0));
    EXPECT_EQ(init_control(2, block_mfn(0)), -XEN_ENOENT);            // no vCPU 2
    EXPECT_EQ(init_control(kMaxVcpus + 5, block_mfn(0)), -XEN_ENOENT);
    EXPECT_EQ(init_control(0, block_mfn(0), kLastOffset + 8), -XEN_EINVAL);   // crosses the page
    EXPECT_EQ(init_control(0, block_mfn(0), 4), -XEN_EINVAL);         // not 8-byte aligned
    EXPECT_EQ(init_control(0, l4().v), -XEN_EINVAL);                  // a page table: never writable
    EXPECT_EQ(init_control(0, kMachineFrames + 7), -XEN_EINVAL);      // no such frame
    EXPECT_EQ(init_control(0, ~uint64_t(0)), -XEN_EINVAL);
    EXPECT_EQ(init_control(0, 3), -XEN_EINVAL);                       // the hypervisor's
    EXPECT_EQ(op_bad_pointer(EVTCHNOP_init_control), -XEN_EFAULT);
    EXPECT_FALSE(evtchn_fifo_on(*ev));
    EXPECT_EQ(counts(block_mfn(0)), before);
    EXPECT_TRUE(frames_consistent());
}

TEST_F(FifoOps, InitControlOfAnotherDomainsFrameIsEinval)
{
    Domain* d2 = second_domain();
    ASSERT_NE(d2, nullptr);
    uint64_t foreign = 0;
    for (uint64_t f = 0; f < kMachineFrames && !foreign; ++f)
        if (frame(Mfn{f}).owner.load() == 2 && ti::type(frame(Mfn{f}).type_info.load()) == PageType::Writable)
            foreign = f;
    ASSERT_NE(foreign, 0u);
    EXPECT_EQ(init_control(0, foreign), -XEN_EINVAL);
    EXPECT_FALSE(evtchn_fifo_on(*ev));
}

TEST_F(FifoOps, InitControlSwitchesToFifoOncePerVcpu)
{
    uint8_t bits = 0;
    EXPECT_EQ(init_control(0, block_mfn(0), 0, &bits), 0);
    EXPECT_EQ(bits, EVTCHN_FIFO_LINK_BITS);
    EXPECT_TRUE(evtchn_fifo_on(*ev));
    EXPECT_EQ(init_control(0, block_mfn(0)), -XEN_EINVAL);          // vCPU 0 has one
    EXPECT_EQ(init_control(0, block_mfn(1), 8), -XEN_EINVAL);       // anywhere
    EXPECT_EQ(init_control(1, block_mfn(1), kLastOffset), 0);       // the last place in the page
    EXPECT_TRUE(frames_consistent());
}

TEST_F(FifoOps, ExpandArrayErrnos)
{
    EXPECT_EQ(expand(array_mfn(0)), -XEN_EOPNOTSUPP);               // still 2-level
    EXPECT_EQ(op_bad_pointer(EVTCHNOP_expand_array), -XEN_EFAULT);
    ASSERT_EQ(init_control(0, block_mfn(0)), 0);
    const uint64_t before = counts(l4().v);
    EXPECT_EQ(expand(l4().v), -XEN_EINVAL);
    EXPECT_EQ(expand(kMachineFrames), -XEN_EINVAL);
    EXPECT_EQ(counts(l4().v), before);
    EXPECT_EQ(ev->fifo.nr_pages.load(), 0u);
    // As Xen: 128 pages (2^17 ports), the same frame as often as it likes.
    for (unsigned i = 0; i < kFifoMaxPages; ++i) ASSERT_EQ(expand(array_mfn(0)), 0) << i;
    EXPECT_EQ(expand(array_mfn(1)), -XEN_ENOSPC);
    EXPECT_EQ(ev->fifo.nr_pages.load(), kFifoMaxPages);
    EXPECT_TRUE(frames_consistent());
}

TEST_F(FifoOps, SetPriorityErrnos)
{
    const unsigned p = bind_ipi(0);
    EXPECT_EQ(set_priority(p, 3), -XEN_ENOSYS);   // 2-level: no priorities
    EXPECT_EQ(set_priority(kPortsPerBucket, 3), -XEN_EINVAL);
    EXPECT_EQ(op_bad_pointer(EVTCHNOP_set_priority), -XEN_EFAULT);
    switch_to_fifo();
    EXPECT_EQ(set_priority(kPortsPerBucket, 3), -XEN_EINVAL);
    EXPECT_EQ(set_priority(p, EVTCHN_FIFO_PRIORITY_MIN + 1), -XEN_EINVAL);
    EXPECT_EQ(ev->ports[p].priority, EVTCHN_FIFO_PRIORITY_DEFAULT);
    EXPECT_EQ(set_priority(p, EVTCHN_FIFO_PRIORITY_MIN), 0);
    EXPECT_EQ(set_priority(p, EVTCHN_FIFO_PRIORITY_MAX), 0);
    EXPECT_EQ(ev->ports[p].priority, EVTCHN_FIFO_PRIORITY_MAX);
    EXPECT_EQ(set_priority(p + 1, 2), 0);   // a free port, as Xen: binding resets it
    EXPECT_EQ(bind_ipi(0), p + 1);
    EXPECT_EQ(ev->ports[p + 1].priority, EVTCHN_FIFO_PRIORITY_DEFAULT);
}

TEST_F(FifoOps, ResetGoesBackToTwoLevelAndDropsTheFrames)
{
    const uint64_t block_before = counts(block_mfn(0)), page_before = counts(array_mfn(0));
    switch_to_fifo(1, 2);
    EXPECT_NE(counts(block_mfn(0)), block_before);
    EXPECT_TRUE(frames_consistent());
    const unsigned p = unmasked_ipi(0);
    EXPECT_EQ(send(p), 0);
    evtchn_reset_t r{DOMID_SELF};
    EXPECT_EQ(op(EVTCHNOP_reset, r), 0);
    EXPECT_FALSE(evtchn_fifo_on(*ev));
    EXPECT_EQ(counts(block_mfn(0)), block_before);
    EXPECT_EQ(counts(array_mfn(0)), page_before);
    EXPECT_TRUE(frames_consistent());
    // 2-level again: a new port's event is in shared_info's bitmaps.
    const unsigned q = bind_ipi(0);
    EXPECT_EQ(send(q), 0);
    EXPECT_TRUE(pending(q));
    EXPECT_EQ(expand(array_mfn(0)), -XEN_EOPNOTSUPP);
    EXPECT_EQ(set_priority(q, 1), -XEN_ENOSYS);
    // And FIFO may be set up again.
    EXPECT_EQ(init_control(0, block_mfn(0)), 0);
}

// SCHEDOP_poll reads event words without the event lock; EVTCHNOP_reset on
// another vCPU clears a page pointer after the page count. A reader caught
// between the two finds no word (not pending), never a word near address 0.
TEST_F(FifoOps, AReaderBetweenResetsTwoStoresFindsNoWord)
{
    switch_to_fifo(1, 1);
    const unsigned p = unmasked_ipi(0);
    EXPECT_EQ(send(p), 0);
    ASSERT_TRUE(evtchn_is_pending(*ev, p));
    event_word_t* page = ev->fifo.page[0].exchange(nullptr);   // nr_pages still 1
    EXPECT_FALSE(evtchn_is_pending(*ev, p));
    ev->fifo.page[0].store(page);
}

TEST_F(FifoOps, TeardownDropsTheFrames)
{
    switch_to_fifo(2, 2);
    EXPECT_TRUE(frames_consistent());
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.kept, 0u);
    EXPECT_FALSE(evtchn_fifo_on(*ev));
}

TEST_F(FifoOps, PortsBoundUnderTwoLevelCarryTheirPendingEvents)
{
    const unsigned p = bind_ipi(0), q = bind_ipi(0);
    EXPECT_EQ(send(p), 0);
    ASSERT_TRUE(pending(p));
    switch_to_fifo(0);
    EXPECT_TRUE(ev->ports[p].fifo_pending);
    EXPECT_FALSE(ev->ports[q].fifo_pending);
    add_page();
    // Pending in its word; masked, as the guest left the new page, so not linked.
    EXPECT_EQ(word(p), kFifoMasked | kFifoPending);
    EXPECT_EQ(word(q), kFifoMasked);
    EXPECT_FALSE(ev->ports[p].fifo_pending);
    // The guest unmasks it: pending, so through the hypercall, which links it.
    EXPECT_FALSE(guest(0).unmask_local(p));
    info(0).evtchn_upcall_pending = 0;   // the 2-level upcall, taken
    EXPECT_EQ(unmask_call(p), 0);
    EXPECT_EQ(word(p), kFifoPending | kFifoLinked);
    EXPECT_EQ(block(0)->head[EVTCHN_FIFO_PRIORITY_DEFAULT], p);
    EXPECT_TRUE(out.kicks.has(0));
}

TEST_F(FifoOps, EventBeforeItsPageIsRaisedWhenThePageComes)
{
    switch_to_fifo(1);
    unsigned p = 0;
    while (p < kFifoWordsPerPage) p = bind_ipi(0);
    ASSERT_EQ(p, kFifoWordsPerPage);   // the first port of page 1
    EXPECT_EQ(send(p), 0);
    EXPECT_TRUE(ev->ports[p].fifo_pending);
    EXPECT_FALSE(evtchn_is_pending(*ev, p));   // no word, as Xen
    add_page();
    EXPECT_EQ(word(p), kFifoMasked | kFifoPending);
    EXPECT_TRUE(evtchn_is_pending(*ev, p));
}

TEST_F(FifoOps, UnmaskAndCloseOfAPortWithoutAWordDoNothing)
{
    switch_to_fifo(0);
    const unsigned p = bind_ipi(0);
    EXPECT_EQ(unmask_call(p), 0);
    EXPECT_EQ(port_close(p), 0);
    EXPECT_EQ(unmask_call(kPortsPerBucket), -XEN_EINVAL);
}

} // namespace
} // namespace pvmmu::test
