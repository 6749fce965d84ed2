// The FIFO event ABI inside the core (core/event_fifo.h): the protocol on
// the event words (evtchn_fifo.cc), which evtchn_2l.cc's evtchn_raise and
// friends hand over to once the domain switched, and the three sub-ops
// (evtchn_fifo_op.cc), which evtchn_op.cc dispatches. All with the domain's
// event lock held.
#pragma once

#include "core/events.h"
#include "core/hypervisor.h"

namespace pvmmu {

// The word of `port`, or null when the event array does not reach it yet.
event_word_t* fifo_word(const FifoEvents& f, unsigned port);

// Xen's evtchn_fifo_set_pending: PENDING set; unless masked, or the
// notified vCPU has no control block, or already LINKED, the port is linked
// at the tail of its queue (its priority, its vCPU), and a queue that was
// empty gets HEAD, its READY bit and, if READY was clear, the upcall.
void fifo_raise(DomainEvents& e, unsigned port, Kicks& k);
// MASKED cleared, and a pending port raised again (linked).
void fifo_unmask(DomainEvents& e, unsigned port, Kicks& k);
void fifo_clear_pending(DomainEvents& e, unsigned port);
bool fifo_is_pending(const DomainEvents& e, unsigned port);

// The sub-ops (docs/abi.md §12.6), their arguments already copied in.
long fifo_init_control(Hypervisor& hv, Domain& d, evtchn_init_control_t& a);
long fifo_expand_array(Hypervisor& hv, Domain& d, uint64_t array_gfn, Kicks& k);
long fifo_set_priority(DomainEvents& e, uint32_t port, uint32_t priority);

} // namespace pvmmu
