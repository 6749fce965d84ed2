// The guest's side of the FIFO event ABI, modelled on what Linux 6.1 does
// (drivers/xen/events/events_fifo.c), over the host memory that stands for
// its control block and event array pages: it consumes its queues from
// the READY word and each queue's HEAD, taking an event by clearing LINKED
// and LINK in one compare-exchange; it masks by setting MASKED and unmasks
// by clearing it only while neither PENDING nor BUSY is set, else asks the
// hypervisor (EVTCHNOP_unmask). Tests drive it next to the core, on one
// thread or on another.
#pragma once

#include <functional>

#include <pvmmu/abi.h>

#include "core/event_fifo.h"

namespace pvmmu::test {

class FifoGuest {
public:
    // `pages[i]`: event array page i (as the guest gave them to
    // EVTCHNOP_expand_array), `nr_pages` of them.
    FifoGuest(evtchn_fifo_control_block_t* block, event_word_t* const* pages, unsigned nr_pages)
        : block_(block), pages_(pages), nr_pages_(nr_pages)
    {
    }

    event_word_t* word(unsigned port) const
    {
        return port / kFifoWordsPerPage < nr_pages_ ? pages_[port / kFifoWordsPerPage] + port % kFifoWordsPerPage
                                                    : nullptr;
    }
    event_word_t load(unsigned port) const { return __atomic_load_n(word(port), __ATOMIC_SEQ_CST); }

    // The upcall's work (Linux's __evtchn_fifo_handle_events): every ready
    // queue, highest priority first, until READY stays clear. `handle` sees
    // each event taken that is pending and not masked, after its PENDING is
    // cleared (Linux's handler acks it first). Returns the events handled.
    unsigned handle_events(const std::function<void(unsigned)>& handle)
    {
        unsigned n = 0;
        uint32_t ready = __atomic_exchange_n(&block_->ready, 0u, __ATOMIC_SEQ_CST);
        while (ready) {
            const unsigned q = unsigned(__builtin_ctz(ready));
            n += consume_one(q, ready, handle);
            ready |= __atomic_exchange_n(&block_->ready, 0u, __ATOMIC_SEQ_CST);
        }
        return n;
    }

    void mask(unsigned port) { (void)__atomic_fetch_or(word(port), kFifoMasked, __ATOMIC_SEQ_CST); }

    // True when the guest cleared MASKED itself; false when the port is
    // pending, and the caller must make the EVTCHNOP_unmask hypercall.
    bool unmask_local(unsigned port)
    {
        event_word_t* w = word(port);
        event_word_t v = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        for (;;) {
            if (!(v & kFifoMasked)) return true;
            if (v & kFifoPending) return false;
            const event_word_t expect = v & ~kFifoBusy;   // waits while the hypervisor holds BUSY
            v = expect;
            if (__atomic_compare_exchange_n(w, &v, expect & ~kFifoMasked, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                return true;
        }
    }

    uint32_t local_head(unsigned q) const { return head_[q]; }

private:
    // Linux's clear_linked: LINKED and LINK cleared together; the old LINK.
    static uint32_t clear_linked(event_word_t* w)
    {
        event_word_t v = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        while (!__atomic_compare_exchange_n(w, &v, v & ~(kFifoLinked | kFifoLinkMask), false, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST)) {
        }
        return v & kFifoLinkMask;
    }

    unsigned consume_one(unsigned q, uint32_t& ready, const std::function<void(unsigned)>& handle)
    {
        uint32_t port = head_[q];
        if (!port) port = __atomic_load_n(&block_->head[q], __ATOMIC_SEQ_CST);   // at the tail last time
        event_word_t* w = word(port);
        if (!w) {   // a HEAD beyond the array: only a broken hypervisor writes one
            ready &= ~(uint32_t(1) << q);
            head_[q] = 0;
            ++bad_heads;
            return 0;
        }
        const uint32_t next = clear_linked(w);
        if (!next) ready &= ~(uint32_t(1) << q);
        head_[q] = next;
        const event_word_t v = __atomic_load_n(w, __ATOMIC_SEQ_CST);
        if (!(v & kFifoPending) || (v & kFifoMasked)) return 0;
        (void)__atomic_fetch_and(w, ~kFifoPending, __ATOMIC_SEQ_CST);
        handle(port);
        return 1;
    }

    evtchn_fifo_control_block_t* block_;
    event_word_t* const* pages_;
    unsigned nr_pages_;
    uint32_t head_[kFifoQueues] = {};

public:
    unsigned bad_heads = 0;
};

} // namespace pvmmu::test
