// The FIFO event ABI's protocol on guest memory (<xen/event_channel.h>
// "FIFO ABI"; docs/architecture.md §9): linking a raised event at the tail
// of its queue while the guest consumes the queue from its head.
//
// The guest (Linux's drivers/xen/events/events_fifo.c) consumes an event by
// clearing LINKED and LINK together in one compare-exchange, which hands it
// the next port; it may also set MASKED, clear PENDING, and clear MASKED
// when the word is neither PENDING nor BUSY. The hypervisor links a new
// event after the tail with one compare-exchange that succeeds only while
// the tail is still LINKED: either the guest has not consumed the tail yet
// and will follow the new LINK, or it has, the exchange fails, and the new
// event becomes the queue's HEAD with the READY bit set. Each word change a
// guest makes meanwhile fails one exchange; BUSY on the tail stops it from
// unmasking, so a guest that keeps the protocol makes it fail a few times at
// most, and a guest that does not is given up on after kLinkTries, as Xen
// does. The hypervisor never reads a LINK, so no value a guest writes can
// make it loop or reach outside the array.
#include "evtchn_fifo.h"

namespace pvmmu {

namespace {

// Xen's bound on the exchanges tried with the tail marked BUSY.
constexpr unsigned kLinkTries = 4;

event_word_t load(const event_word_t* w) { return __atomic_load_n(w, __ATOMIC_SEQ_CST); }
bool test_and_set(event_word_t* w, event_word_t bit) { return __atomic_fetch_or(w, bit, __ATOMIC_SEQ_CST) & bit; }
void clear(event_word_t* w, event_word_t bit) { (void)__atomic_fetch_and(w, ~bit, __ATOMIC_SEQ_CST); }

enum class Link : uint8_t { Done, TailUnlinked, Changed };

// One exchange: the tail's LINK becomes `port` (and BUSY goes with it) if
// the tail is still LINKED; `w` is the value expected, reloaded on failure.
Link try_link(event_word_t* tail, event_word_t& w, uint32_t port)
{
    if (!(w & kFifoLinked)) return Link::TailUnlinked;
    const event_word_t next = (w & ~(kFifoBusy | kFifoLinkMask)) | port;
    return __atomic_compare_exchange_n(tail, &w, next, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST) ? Link::Done
                                                                                                     : Link::Changed;
}

// Whether `port` is now linked after `tail` (false: the guest consumed the
// tail, the queue is empty).
bool link_after(event_word_t* tail, uint32_t port)
{
    event_word_t w = load(tail);
    Link r = try_link(tail, w, port);
    if (r != Link::Changed) return r == Link::Done;
    (void)test_and_set(tail, kFifoBusy);
    w = load(tail);
    for (unsigned i = 0; i < kLinkTries; ++i) {
        r = try_link(tail, w, port);
        if (r == Link::Done) return true;
        if (r == Link::TailUnlinked) break;
    }
    clear(tail, kFifoBusy);
    // A guest that changed the tail kLinkTries times with BUSY set broke the
    // protocol: its event is left LINKED and unreachable, as Xen leaves it.
    return r != Link::TailUnlinked;
}

} // namespace

event_word_t* fifo_word(const FifoEvents& f, unsigned port)
{
    const unsigned pages = f.nr_pages.load(std::memory_order_acquire);
    if (port >= pages * kFifoWordsPerPage) return nullptr;
    // A lock-free reader (SCHEDOP_poll) may race EVTCHNOP_reset on another
    // vCPU (release_event_frames), which clears the page after nr_pages:
    // a page seen null is no word, never an address near 0.
    event_word_t* page = f.page[port / kFifoWordsPerPage].load(std::memory_order_acquire);
    return page ? page + port % kFifoWordsPerPage : nullptr;
}

void fifo_raise(DomainEvents& e, unsigned port, Kicks& k)
{
    FifoEvents& f = e.fifo;
    Port& p = e.ports[port];
    event_word_t* w = fifo_word(f, port);
    if (!w) {
        p.fifo_pending = true;   // raised again when its page comes (fifo_expand_array)
        return;
    }
    const bool was_pending = test_and_set(w, kFifoPending);
    const unsigned id = p.vcpu;
    FifoVcpu& fv = f.vcpu[id];
    bool became_head = false;
    // Without a control block the event stays pending, unlinked, as Xen: a
    // guest unmasks nothing before its vCPU's init_control.
    if (!fv.block) p.fifo_dropped = true;
    else if (!(load(w) & kFifoMasked) && !test_and_set(w, kFifoLinked)) {
        p.fifo_dropped = false;
        // Linked on another queue last time and its tail there: that queue
        // is empty now, and must not link after this port any more.
        FifoQueueId& last = f.last[port];
        uint32_t& old_tail = f.vcpu[last.vcpu].tail[last.priority];
        if (old_tail == port) old_tail = 0;
        last = FifoQueueId{uint16_t(id), p.priority};
        uint32_t& tail = fv.tail[p.priority];
        event_word_t* tail_word = tail ? fifo_word(f, tail) : nullptr;
        if (!(tail_word && link_after(tail_word, port))) {
            __atomic_store_n(&fv.block->head[p.priority], uint32_t(port), __ATOMIC_SEQ_CST);
            became_head = true;
        }
        tail = port;
    }
    const uint32_t ready = uint32_t(1) << p.priority;
    if (became_head && !(__atomic_fetch_or(&fv.block->ready, ready, __ATOMIC_SEQ_CST) & ready))
        evtchn_mark_upcall(e, id, k);
    if (!was_pending) evtchn_wake_pollers(e, port, k);
}

void fifo_unmask(DomainEvents& e, unsigned port, Kicks& k)
{
    event_word_t* w = fifo_word(e.fifo, port);
    if (!w) return;
    clear(w, kFifoMasked);
    if (load(w) & kFifoPending) fifo_raise(e, port, k);
}

// Only PENDING: a linked event stays on its queue; the guest skips it there.
void fifo_clear_pending(DomainEvents& e, unsigned port)
{
    if (event_word_t* w = fifo_word(e.fifo, port)) clear(w, kFifoPending);
}

bool fifo_is_pending(const DomainEvents& e, unsigned port)
{
    const event_word_t* w = fifo_word(e.fifo, port);
    return w && (load(w) & kFifoPending);
}

} // namespace pvmmu
