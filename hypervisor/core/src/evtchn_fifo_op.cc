// The FIFO ABI's sub-ops of HYPERVISOR_event_channel_op (init_control,
// expand_array, set_priority) with Xen 4.17's checks and errnos
// (common/event_fifo.c; docs/abi.md §12.6), and going back to 2-level.
//
// A PV guest names its frames by machine frame number (its gfn is the mfn).
// Each frame the ABI uses, a control block or an event array page, is held
// as Xen's map_guest_page holds it: a general and a writable type
// reference, so it is the caller's and never becomes a page table while the
// hypervisor writes into it; -EINVAL when either cannot be had. They are
// dropped when the domain goes back to 2-level (EVTCHNOP_reset) or is torn
// down (release_event_frames).
#include "core/refs.h"
#include "evtchn_fifo.h"

namespace pvmmu {

namespace {

// The host address of a guest frame the hypervisor may write, with its references.
void* hold_frame(Hypervisor& hv, Domain& d, uint64_t gfn, Mfn& out)
{
    const Mfn m{gfn};
    if (!hv.mem().valid(m)) return nullptr;
    if (get_page_and_type(hv, m, d.id, PageType::Writable)) return nullptr;
    out = m;
    return hv.mem().frame(m);
}

// Xen's setup_ports: a port bound under 2-level keeps an event pending there,
// raised once its event word exists (expand_array); priorities start at the
// default (Port's).
void carry_over_ports(DomainEvents& e)
{
    const shared_info_t* s = e.shared();
    for (unsigned p = 1; p < e.valid; ++p)
        if ((__atomic_load_n(&s->evtchn_pending[p / kPortsPerWord], __ATOMIC_SEQ_CST) >> (p % kPortsPerWord)) & 1)
            e.ports[p].fifo_pending = true;
}

} // namespace

long fifo_init_control(Hypervisor& hv, Domain& d, evtchn_init_control_t& a)
{
    DomainEvents& e = *d.events;
    a.link_bits = EVTCHN_FIFO_LINK_BITS;
    if (a.vcpu >= d.nr_vcpus) return -XEN_ENOENT;
    // Within the page, 8-byte aligned.
    if (a.offset > kPageSize - sizeof(evtchn_fifo_control_block_t)) return -XEN_EINVAL;
    if (a.offset & 7) return -XEN_EINVAL;
    FifoVcpu& fv = e.fifo.vcpu[a.vcpu];
    if (fv.block) return -XEN_EINVAL;   // once per vCPU (until EVTCHNOP_reset)
    Mfn m;
    auto* page = static_cast<uint8_t*>(hold_frame(hv, d, a.control_gfn, m));
    if (!page) return -XEN_EINVAL;
    fv.block = reinterpret_cast<evtchn_fifo_control_block_t*>(page + a.offset);
    fv.block_mfn = m;
    for (uint32_t& t : fv.tail) t = 0;
    if (!evtchn_fifo_on(e)) {
        carry_over_ports(e);
        e.fifo.on.store(true, std::memory_order_release);
    }
    return 0;
}

long fifo_expand_array(Hypervisor& hv, Domain& d, uint64_t array_gfn, Kicks& k)
{
    DomainEvents& e = *d.events;
    FifoEvents& f = e.fifo;
    if (!evtchn_fifo_on(e)) return -XEN_EOPNOTSUPP;
    const unsigned n = f.nr_pages.load(std::memory_order_relaxed);
    if (n >= kFifoMaxPages) return -XEN_ENOSPC;
    Mfn m;
    void* page = hold_frame(hv, d, array_gfn, m);
    if (!page) return -XEN_EINVAL;
    f.page_mfn[n] = m;
    f.page[n].store(static_cast<event_word_t*>(page), std::memory_order_relaxed);
    f.nr_pages.store(n + 1, std::memory_order_release);
    // Events raised before their words existed (or carried over from 2-level).
    const unsigned first = n * kFifoWordsPerPage;
    for (unsigned p = first; p < first + kFifoWordsPerPage && p < e.valid; ++p) {
        if (!e.ports[p].fifo_pending) continue;
        e.ports[p].fifo_pending = false;
        fifo_raise(e, p, k);
    }
    return 0;
}

// Under 2-level: -ENOSYS for a valid port, as Xen (no priorities there).
long fifo_set_priority(DomainEvents& e, uint32_t port, uint32_t priority)
{
    if (port >= e.valid) return -XEN_EINVAL;
    if (!evtchn_fifo_on(e)) return -XEN_ENOSYS;
    if (priority > EVTCHN_FIFO_PRIORITY_MIN) return -XEN_EINVAL;
    // Only later events take the new queue; one linked already stays where it is.
    e.ports[port].priority = uint8_t(priority);
    return 0;
}

void release_event_frames(Hypervisor& hv, DomainEvents& e)
{
    FifoEvents& f = e.fifo;
    if (!evtchn_fifo_on(e)) return;
    // Unpublished first: a lock-free reader (SCHEDOP_poll) finds no word.
    f.on.store(false, std::memory_order_release);
    const unsigned n = f.nr_pages.exchange(0, std::memory_order_acq_rel);
    for (unsigned i = 0; i < n; ++i) {
        f.page[i].store(nullptr, std::memory_order_relaxed);
        put_page_and_type(hv, f.page_mfn[i]);
        f.page_mfn[i] = Mfn{0};
    }
    for (FifoVcpu& fv : f.vcpu) {
        if (fv.block) put_page_and_type(hv, fv.block_mfn);
        fv = FifoVcpu{};
    }
    for (FifoQueueId& q : f.last) q = FifoQueueId{};
    for (Port& p : e.ports) {
        p.fifo_pending = p.fifo_dropped = false;
        p.priority = EVTCHN_FIFO_PRIORITY_DEFAULT;
    }
}

} // namespace pvmmu
