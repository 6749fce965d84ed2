// The FIFO ABI's "no event lost" (core/event_invariants.h), on a quiescent
// domain whose guest is between two runs of its consumer (as Linux's
// events_fifo.c, which starts each run from the control block's HEAD once
// it reached a queue's end):
//  - an event pending and not masked, of a port whose vCPU has a control
//    block, is LINKED (unless it came before the control block:
//    Port::fifo_dropped);
//  - a LINKED event is reachable from the HEAD of a queue whose READY bit
//    is set, following LINKs through LINKED words;
//  - a READY bit set has the vCPU's evtchn_upcall_pending set;
//  - an event kept for a page not yet added (Port::fifo_pending) has no word.
// The walk never trusts a LINK: it stops at a port without a word, at an
// unlinked word, and at a port seen before.
#include "event_fifo_invariants.h"

#include "evtchn_fifo.h"

namespace pvmmu {

namespace {

event_word_t load(const event_word_t* w) { return __atomic_load_n(w, __ATOMIC_SEQ_CST); }

struct Seen {
    uint64_t bits[kEvtchnPorts / 64] = {};
    bool test_and_set(unsigned p)
    {
        const uint64_t b = uint64_t(1) << (p % 64);
        const bool was = bits[p / 64] & b;
        bits[p / 64] |= b;
        return was;
    }
};

} // namespace

void check_fifo_queues(DomainEvents& e, const Domain& d, InvariantReport& r)
{
    const FifoEvents& f = e.fifo;
    const unsigned words = f.nr_pages.load(std::memory_order_acquire) * kFifoWordsPerPage;
    const unsigned limit = words < kEvtchnPorts ? words : kEvtchnPorts;
    Seen seen;
    for (unsigned id = 0; id < d.nr_vcpus; ++id) {
        const evtchn_fifo_control_block_t* b = f.vcpu[id].block;
        if (!b) continue;
        const uint32_t ready = __atomic_load_n(&b->ready, __ATOMIC_SEQ_CST);
        if (ready && !__atomic_load_n(&event_vcpu_info(e, id)->evtchn_upcall_pending, __ATOMIC_SEQ_CST))
            r.add(Mfn{0}, id, "event lost: a queue READY, no upcall pending", 1, 0);
        for (unsigned q = 0; q < kFifoQueues; ++q) {
            if (!((ready >> q) & 1)) continue;
            for (uint32_t p = __atomic_load_n(&b->head[q], __ATOMIC_SEQ_CST); p && p < limit;) {
                const event_word_t w = load(fifo_word(f, p));
                if (!(w & kFifoLinked) || seen.test_and_set(p)) break;
                p = w & kFifoLinkMask;
            }
        }
    }
    for (unsigned p = 1; p < limit; ++p) {
        const event_word_t w = load(fifo_word(f, p));
        if ((w & kFifoLinked) && !((seen.bits[p / 64] >> (p % 64)) & 1))
            r.add(Mfn{0}, p, "event lost: linked on no READY queue's walk from HEAD", 1, 0);
        if (p >= e.valid) continue;
        const Port& port = e.ports[p];
        if (port.fifo_pending) r.add(Mfn{0}, p, "event lost: kept for an event array page that exists", 0, 1);
        const bool bound = port.state != PortState::Free && port.state != PortState::Reserved;
        if (bound && !port.fifo_dropped && port.vcpu < d.nr_vcpus && f.vcpu[port.vcpu].block && (w & kFifoPending) &&
            !(w & (kFifoMasked | kFifoLinked)))
            r.add(Mfn{0}, p, "event lost: pending and unmasked, not linked", 1, 0);
    }
}

} // namespace pvmmu
