// The event fixture (domain 1, two vCPUs) with the guest's memory for the
// FIFO event ABI in the domain's own data frames, as a PV guest gives them:
// vCPU i's control block in gpfn kBlockGpfn + i, event array page j in gpfn
// kArrayGpfn + j, named by their machine frame numbers. The guest's side
// (support/fifo_guest.h) reads and writes the same frames.
#pragma once

#include <cstring>

#include "support/event_fixture.h"
#include "support/fifo_guest.h"

namespace pvmmu::test {

class FifoTest : public EventTest {
protected:
    static constexpr uint64_t kBlockGpfn = 10, kArrayGpfn = 20;

    uint64_t block_mfn(unsigned vcpu) const { return lay.mfn(kBlockGpfn + vcpu).v; }
    uint64_t array_mfn(unsigned i) const { return lay.mfn(kArrayGpfn + i).v; }
    evtchn_fifo_control_block_t* block(unsigned vcpu)
    {
        return static_cast<evtchn_fifo_control_block_t*>(hv().mem().frame(Mfn{block_mfn(vcpu)}));
    }
    event_word_t* page(unsigned i) { return static_cast<event_word_t*>(hv().mem().frame(Mfn{array_mfn(i)})); }

    long init_control(unsigned vcpu, uint64_t gfn, uint32_t offset = 0, uint8_t* link_bits = nullptr)
    {
        evtchn_init_control_t a{};
        a.control_gfn = gfn;
        a.offset = offset;
        a.vcpu = vcpu;
        const long rc = op(EVTCHNOP_init_control, a);
        if (link_bits) *link_bits = a.link_bits;
        return rc;
    }
    long expand(uint64_t gfn)
    {
        evtchn_expand_array_t a{gfn};
        return op(EVTCHNOP_expand_array, a);
    }
    long set_priority(unsigned port, unsigned priority)
    {
        evtchn_set_priority_t a{port, priority};
        return op(EVTCHNOP_set_priority, a);
    }
    long port_close(unsigned port)
    {
        evtchn_close_t c{port};
        return op(EVTCHNOP_close, c);
    }
    long unmask_call(unsigned port, Vcpu* v = nullptr)
    {
        evtchn_unmask_t u{port};
        return op(EVTCHNOP_unmask, u, v);
    }

    // What Linux does first: a cleared control block for each vCPU in
    // `vcpus`, then event array pages, each with every event masked.
    void switch_to_fifo(unsigned pages = 1, unsigned vcpus = 2)
    {
        for (unsigned v = 0; v < vcpus; ++v) {
            std::memset(block(v), 0, sizeof(evtchn_fifo_control_block_t));
            ASSERT_EQ(init_control(v, block_mfn(v)), 0);
        }
        for (unsigned i = 0; i < pages; ++i) add_page();
    }
    void add_page()
    {
        const unsigned i = nr_pages;
        for (unsigned w = 0; w < kFifoWordsPerPage; ++w) page(i)[w] = kFifoMasked;
        ASSERT_EQ(expand(array_mfn(i)), 0);
        pages_[i] = page(i);
        ++nr_pages;
    }
    FifoGuest guest(unsigned vcpu) { return FifoGuest(block(vcpu), pages_, nr_pages); }
    event_word_t word(unsigned port) { return __atomic_load_n(&page(port / kFifoWordsPerPage)[port % kFifoWordsPerPage], __ATOMIC_SEQ_CST); }
    // A port bound to an IPI of `vcpu`, unmasked by the guest as Linux does
    // when it enables the IRQ.
    unsigned unmasked_ipi(unsigned vcpu)
    {
        const unsigned p = bind_ipi(vcpu);
        EXPECT_TRUE(guest(vcpu).unmask_local(p));
        return p;
    }

    event_word_t* pages_[kFifoMaxPages] = {};
    unsigned nr_pages = 0;
};

} // namespace pvmmu::test
