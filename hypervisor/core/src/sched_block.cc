// SCHEDOP_block, SCHEDOP_poll and SCHEDOP_yield (<xen/sched.h>): the state a
// vCPU waits in, and the checks that keep a wake-up from being lost: each
// marks the vCPU blocked first and only then looks for what would wake it,
// while a raise (core/src/evtchn_2l.cc) sets the bits first and only then
// clears the mark, so one of the two always sees the other.
#include "core/event_ops.h"

namespace pvmmu {

namespace {

// Xen's "fairly arbitrary limit" on the ports of one poll.
constexpr unsigned kMaxPollPorts = 128;

// An upcall is pending and not masked (Xen's local_events_need_delivery).
bool upcall_due(DomainEvents& e, unsigned id)
{
    const vcpu_info_t* vi = event_vcpu_info(e, id);
    return __atomic_load_n(&vi->evtchn_upcall_pending, __ATOMIC_SEQ_CST) &&
           !__atomic_load_n(&vi->evtchn_upcall_mask, __ATOMIC_SEQ_CST);
}

long block(DomainEvents& e, Vcpu& v, EventOut& out)
{
    VcpuEvents& ve = e.vcpu[v.id];
    __atomic_store_n(&event_vcpu_info(e, v.id)->evtchn_upcall_mask, uint8_t(0), __ATOMIC_SEQ_CST);
    ve.blocked.store(true, std::memory_order_seq_cst);
    if (upcall_due(e, v.id))
        ve.blocked.store(false, std::memory_order_seq_cst);
    else
        out.block = true;
    return 0;
}

long poll(Hypervisor& hv, DomainEvents& e, Vcpu& v, Vaddr arg, EventOut& out)
{
    sched_poll_t p;
    Platform& plat = hv.platform();
    if (plat.copy_from_guest(v, &p, arg, sizeof(p))) return -XEN_EFAULT;
    if (p.nr_ports > kMaxPollPorts) return -XEN_EINVAL;
    VcpuEvents& ve = e.vcpu[v.id];
    ve.blocked.store(true, std::memory_order_seq_cst);
    ve.poll_port.store(-1, std::memory_order_relaxed);
    // The timeout is set before the vCPU counts as polling, so a wake-up from
    // here on clears it, and a poll without one never inherits an old one.
    ve.poll_deadline.store(p.timeout ? p.timeout : kNever, std::memory_order_relaxed);
    e.poll_mask.fetch_or(uint64_t(1) << v.id, std::memory_order_seq_cst);
    long rc = 0;
    bool wait = !upcall_due(e, v.id);
    evtchn_port_t port = 0;
    for (unsigned i = 0; wait && i < p.nr_ports; ++i) {
        const Vaddr at{uint64_t(p.ports.p) + i * sizeof(evtchn_port_t)};
        if (plat.copy_from_guest(v, &port, at, sizeof(port))) {
            rc = -XEN_EFAULT;
            wait = false;
        } else if (port >= kEvtchnPorts) {
            rc = -XEN_EINVAL;
            wait = false;
        } else if (evtchn_is_pending(e, port)) {
            wait = false;
        }
    }
    if (wait) {
        if (p.nr_ports == 1) ve.poll_port.store(int32_t(port), std::memory_order_relaxed);
        out.block = true;
        return 0;
    }
    e.poll_mask.fetch_and(~(uint64_t(1) << v.id), std::memory_order_seq_cst);
    ve.poll_port.store(0, std::memory_order_relaxed);
    ve.poll_deadline.store(kNever, std::memory_order_relaxed);
    ve.blocked.store(false, std::memory_order_seq_cst);
    return rc;
}

} // namespace

long sched_op(Hypervisor& hv, Vcpu& v, unsigned cmd, Vaddr arg, uint64_t, EventOut& out)
{
    DomainEvents* e = v.domain->events;
    if (!e) return -XEN_ENOSYS;
    switch (cmd) {
    case SCHEDOP_yield:
        return 0;   // the platform may run something else; nothing to record
    case SCHEDOP_block:
        return block(*e, v, out);
    case SCHEDOP_poll:
        return poll(hv, *e, v, arg, out);
    default:
        return -XEN_ENOSYS;
    }
}

bool vcpu_blocked(const Vcpu& v)
{
    const DomainEvents* e = v.domain->events;
    return e && e->vcpu[v.id].blocked.load(std::memory_order_seq_cst);
}

HcResult event_hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& f, uint64_t now, EventOut& out)
{
    switch (f.op) {
    case __HYPERVISOR_event_channel_op:
        return done(evtchn_op(hv, v, unsigned(f.arg[0]), Vaddr{f.arg[1]}, out));
    case __HYPERVISOR_set_timer_op:
        return done(set_timer_op(hv, v, f.arg[0], now));
    case __HYPERVISOR_sched_op:
        return done(sched_op(hv, v, unsigned(f.arg[0]), Vaddr{f.arg[1]}, now, out));
    case __HYPERVISOR_vcpu_op: {
        Domain& d = *v.domain;
        if (f.arg[1] >= d.nr_vcpus) return done(-XEN_ENOENT);
        return done(vcpu_timer_op(hv, v, d.vcpus[f.arg[1]], unsigned(f.arg[0]), Vaddr{f.arg[2]}, now));
    }
    default:
        return done(-XEN_ENOSYS);
    }
}

} // namespace pvmmu
