// HYPERVISOR_event_channel_op (hypercall 32): binding, sending, closing and
// querying ports, each answered with Xen 4.17's errno for each bad argument
// (<xen/event_channel.h>; docs/abi.md "Event channels"), on either ABI; the
// FIFO ABI's own sub-ops are evtchn_fifo_op.cc's. Every
// sub-op runs under the domain's event lock; an argument is copied in before
// and the result out after, and a failed sub-op changes nothing.
#include "core/event_ops.h"
#include "evtchn_fifo.h"

namespace pvmmu {

namespace {

// Xen's virq_is_global: the timer, debug, profiling and PMU VIRQs are per
// vCPU; every other (VIRQ_CONSOLE among them) is the domain's, bound on vCPU 0.
bool virq_is_global(unsigned virq)
{
    return !(virq == VIRQ_TIMER || virq == VIRQ_DEBUG || virq == VIRQ_XENOPROF || virq == VIRQ_XENPMU);
}

bool port_valid(const DomainEvents& e, uint64_t port) { return port < e.valid; }

// The lowest free port, making the next bucket valid when the valid ones are
// full; -ENOSPC past max_port.
int free_port(DomainEvents& e)
{
    for (unsigned p = 0; p <= e.max_port && p < kEvtchnPorts; ++p) {
        if (p >= e.valid) e.valid += kPortsPerBucket;
        if (e.ports[p].state == PortState::Free) return int(p);
    }
    return -XEN_ENOSPC;
}

// Frees a port (Xen's free_evtchn): not pending, bound to vCPU 0 again.
void free_one(DomainEvents& e, unsigned port)
{
    evtchn_clear_pending(e, port);
    e.ports[port] = Port{};
}

// Xen's rcu_lock_domain_by_any_id, then XSM_TARGET for a domain without
// privilege: itself only (-ESRCH for none, -EPERM for another).
int own_domain(Hypervisor& hv, const Domain& d, DomId dom)
{
    if (dom == DOMID_SELF || dom == d.id) return 0;
    return hv.domain(dom) ? -XEN_EPERM : -XEN_ESRCH;
}

class Op {
public:
    Op(Hypervisor& hv, Vcpu& v, EventOut& out) : hv_(hv), d_(*v.domain), e_(*d_.events), out_(out) {}

    long alloc_unbound(evtchn_alloc_unbound_t& a)
    {
        if (const int rc = own_domain(hv_, d_, a.dom)) return rc;
        const bool remote = a.remote_dom != DOMID_SELF && a.remote_dom != d_.id;
        if (remote && !d_.policy.allows(Perm::EvtchnInterdomain)) return -XEN_EPERM;
        const int p = free_port(e_);
        if (p < 0) return p;
        Port& port = e_.ports[p];
        port = Port{};
        port.state = PortState::Unbound;
        port.remote_dom = a.remote_dom == DOMID_SELF ? d_.id : a.remote_dom;
        a.port = evtchn_port_t(p);
        return 0;
    }

    // An unbound port of this domain or of another one (bind_remote) that
    // was offered to this domain.
    long bind_interdomain(evtchn_bind_interdomain_t& b)
    {
        const DomId rdom = b.remote_dom == DOMID_SELF ? d_.id : b.remote_dom;
        if (!hv_.domain(rdom)) return -XEN_ESRCH;
        if (rdom != d_.id) return bind_remote(b, rdom);
        const int lport = free_port(e_);
        if (lport < 0) return lport;
        if (!port_valid(e_, b.remote_port)) return -XEN_EINVAL;
        Port& r = e_.ports[b.remote_port];
        if (r.state != PortState::Unbound || r.remote_dom != d_.id) return -XEN_EINVAL;
        Port& l = e_.ports[lport];
        l = Port{};
        l.state = PortState::Interdomain;
        l.remote_dom = d_.id;
        l.remote_port = uint16_t(b.remote_port);
        r.state = PortState::Interdomain;
        r.remote_dom = d_.id;
        r.remote_port = uint16_t(lport);
        // As Xen: an event the unbound end may have lost is made up for.
        evtchn_raise(e_, unsigned(lport), out_.kicks);
        b.local_port = evtchn_port_t(lport);
        return 0;
    }

    long bind_virq(evtchn_bind_virq_t& b)
    {
        if (b.virq >= NR_VIRQS) return -XEN_EINVAL;
        if (virq_is_global(b.virq) && b.vcpu != 0) return -XEN_EINVAL;
        if (b.vcpu >= d_.nr_vcpus) return -XEN_ENOENT;
        std::atomic<uint16_t>& slot = e_.vcpu[b.vcpu].virq_port[b.virq];
        if (slot.load(std::memory_order_relaxed)) return -XEN_EEXIST;
        const int p = free_port(e_);
        if (p < 0) return p;
        Port& port = e_.ports[p];
        port = Port{};
        port.state = PortState::Virq;
        port.virq = uint8_t(b.virq);
        port.vcpu = uint16_t(b.vcpu);
        slot.store(uint16_t(p), std::memory_order_relaxed);
        b.port = evtchn_port_t(p);
        return 0;
    }

    long bind_ipi(evtchn_bind_ipi_t& b)
    {
        if (b.vcpu >= d_.nr_vcpus) return -XEN_ENOENT;
        const int p = free_port(e_);
        if (p < 0) return p;
        Port& port = e_.ports[p];
        port = Port{};
        port.state = PortState::Ipi;
        port.vcpu = uint16_t(b.vcpu);
        b.port = evtchn_port_t(p);
        return 0;
    }

    long close(uint32_t p)
    {
        if (!port_valid(e_, p)) return -XEN_EINVAL;
        Port& port = e_.ports[p];
        if (port.platform_end) return -XEN_EINVAL;   // Xen: a Xen-attached channel
        // An end of a channel to another domain; if the binding changes
        // while the locks are retaken, whatever is there then is closed.
        while (port.state == PortState::Interdomain && !port.platform_end && port.remote_dom != d_.id) {
            const Domain* rd = hv_.domain(port.remote_dom);
            if (!rd || !rd->events) break;   // the other end is gone: only this one is left
            if (DomainEvents* re = lock_peer(p)) {
                // The other end waits for this domain again, as in Xen.
                Port& r = re->ports[port.remote_port];
                r.state = PortState::Unbound;
                r.remote_dom = d_.id;
                r.remote_port = 0;
                re->lock.unlock();
                free_one(e_, p);
                return 0;
            }
        }
        if (port.platform_end) return -XEN_EINVAL;
        switch (port.state) {
        case PortState::Free:
        case PortState::Reserved:
            return -XEN_EINVAL;
        case PortState::Virq: {
            // A global VIRQ's binding is vCPU 0's whatever vCPU it notifies.
            const unsigned owner = virq_is_global(port.virq) ? 0 : port.vcpu;
            std::atomic<uint16_t>& slot = e_.vcpu[owner].virq_port[port.virq];
            if (slot.load(std::memory_order_relaxed) == p) slot.store(0, std::memory_order_relaxed);
            break;
        }
        case PortState::Interdomain: {
            if (port.remote_dom != d_.id) break;   // its other end's domain is gone
            // The other end, this domain's own, waits again.
            Port& r = e_.ports[port.remote_port];
            r.state = PortState::Unbound;
            r.remote_dom = d_.id;
            r.remote_port = 0;
            break;
        }
        case PortState::Unbound:
        case PortState::Ipi:
            break;
        }
        free_one(e_, p);
        return 0;
    }

    long send(uint32_t p)
    {
        if (!port_valid(e_, p)) return -XEN_EINVAL;
        const Port& port = e_.ports[p];
        switch (port.state) {
        case PortState::Interdomain:
            if (port.platform_end) {
                out_.platform_port = p;
                return 0;
            }
            if (port.remote_dom != d_.id) return send_remote(p);
            evtchn_raise(e_, port.remote_port, out_.kicks);
            return 0;
        case PortState::Ipi:
            evtchn_raise(e_, p, out_.kicks);
            return 0;
        case PortState::Unbound:
            return 0;   // dropped, as Xen
        default:
            return -XEN_EINVAL;
        }
    }

    long status(evtchn_status_t& s)
    {
        if (const int rc = own_domain(hv_, d_, s.dom)) return rc;
        if (!port_valid(e_, s.port)) return -XEN_EINVAL;
        const Port& port = e_.ports[s.port];
        s.u = {};
        switch (port.state) {
        case PortState::Free:
        case PortState::Reserved:
            s.status = EVTCHNSTAT_closed;
            break;
        case PortState::Unbound:
            s.status = EVTCHNSTAT_unbound;
            s.u.unbound.dom = port.remote_dom;
            break;
        case PortState::Interdomain:
            s.status = EVTCHNSTAT_interdomain;
            // The platform's end is reported as dom0's, where Xen's console daemon runs.
            s.u.interdomain.dom = port.platform_end ? 0 : port.remote_dom;
            s.u.interdomain.port = port.platform_end ? s.port : port.remote_port;
            break;
        case PortState::Virq:
            s.status = EVTCHNSTAT_virq;
            s.u.virq = port.virq;
            break;
        case PortState::Ipi:
            s.status = EVTCHNSTAT_ipi;
            break;
        }
        s.vcpu = port.vcpu;
        return 0;
    }

    long bind_vcpu(const evtchn_bind_vcpu_t& b)
    {
        if (b.vcpu >= d_.nr_vcpus) return -XEN_ENOENT;
        if (!port_valid(e_, b.port)) return -XEN_EINVAL;
        Port& port = e_.ports[b.port];
        if (port.platform_end) return -XEN_EINVAL;
        switch (port.state) {
        case PortState::Virq:
            if (!virq_is_global(port.virq)) return -XEN_EINVAL;
            break;
        case PortState::Unbound:
        case PortState::Interdomain:
            break;
        default:
            return -XEN_EINVAL;   // free, reserved, IPI
        }
        port.vcpu = uint16_t(b.vcpu);
        return 0;
    }

    long unmask(uint32_t p)
    {
        if (!port_valid(e_, p)) return -XEN_EINVAL;
        evtchn_unmask_port(e_, p, out_.kicks);
        return 0;
    }

    // Then, as Xen 4.17, a domain on the FIFO ABI goes back to 2-level.
    long reset(DomId dom)
    {
        if (const int rc = own_domain(hv_, d_, dom)) return rc;
        for (unsigned p = 0; p < e_.valid; ++p) {
            if (e_.ports[p].state == PortState::Free || e_.ports[p].state == PortState::Reserved) continue;
            (void)close(p);   // a platform-ended port stays, as Xen keeps its own
        }
        release_event_frames(hv_, e_);
        return 0;
    }

private:
    // The event state of domain `rdom`, its lock taken besides this
    // domain's (held on entry and on return). Both locks are taken in
    // domain-id order, as Xen's double_evtchn_lock: this domain's is let go
    // and taken again after the other's when the other's id is lower, so
    // two domains binding, sending or closing toward each other at once
    // never wait on each other (tests/concurrency/event_lock_order_test.cc).
    DomainEvents* lock_other(DomId rdom)
    {
        Domain* rd = hv_.domain(rdom);
        DomainEvents* re = rd ? rd->events : nullptr;
        if (!re) return nullptr;
        if (d_.id < rdom) {
            re->lock.lock(hv_.platform());
        } else {
            e_.lock.unlock();
            re->lock.lock(hv_.platform());
            e_.lock.lock(hv_.platform());
        }
        return re;
    }

    // Port p's peer domain's events, locked, if p is still the end of an
    // interdomain channel to that domain once both locks are held; null
    // (only this domain's lock held) if it changed meanwhile.
    DomainEvents* lock_peer(uint32_t p)
    {
        const Port before = e_.ports[p];
        DomainEvents* re = lock_other(before.remote_dom);
        if (!re) return nullptr;
        const Port& now = e_.ports[p];
        if (now.state == PortState::Interdomain && now.remote_dom == before.remote_dom &&
            now.remote_port == before.remote_port && !now.platform_end)
            return re;
        re->lock.unlock();
        return nullptr;
    }

    long bind_remote(evtchn_bind_interdomain_t& b, DomId rdom)
    {
        if (!d_.policy.allows(Perm::EvtchnInterdomain)) return -XEN_EPERM;
        DomainEvents* re = lock_other(rdom);
        if (!re) return -XEN_EINVAL;
        long rc = -XEN_EINVAL;
        const int lport = free_port(e_);
        if (lport < 0) {
            rc = lport;
        } else if (b.remote_port < re->valid) {
            Port& r = re->ports[b.remote_port];
            if (r.state == PortState::Unbound && r.remote_dom == d_.id && !r.platform_end) {
                Port& l = e_.ports[lport];
                l = Port{};
                l.state = PortState::Interdomain;
                l.remote_dom = rdom;
                l.remote_port = uint16_t(b.remote_port);
                r.state = PortState::Interdomain;
                r.remote_dom = d_.id;
                r.remote_port = uint16_t(lport);
                evtchn_raise(e_, unsigned(lport), out_.kicks);
                b.local_port = evtchn_port_t(lport);
                rc = 0;
            }
        }
        re->lock.unlock();
        return rc;
    }

    // A send to another domain's end: raised there, its vCPUs to kick
    // reported in out_.remote_kicks. Dropped when the channel went away
    // while the locks were retaken, as a send on a closing channel is.
    long send_remote(uint32_t p)
    {
        DomainEvents* re = lock_peer(p);
        if (!re) return 0;
        out_.remote_dom = e_.ports[p].remote_dom;
        evtchn_raise(*re, e_.ports[p].remote_port, out_.remote_kicks);
        re->lock.unlock();
        return 0;
    }

    Hypervisor& hv_;
    Domain& d_;
    DomainEvents& e_;
    EventOut& out_;
};

// One sub-op with an argument struct T: copied in, run under the lock,
// copied back out when `writes_back` and it succeeded (Xen: -EFAULT then,
// the sub-op done).
template <class T, class F>
long with_arg(Hypervisor& hv, Vcpu& v, Vaddr arg, bool writes_back, F run)
{
    T a;
    Platform& plat = hv.platform();
    if (plat.copy_from_guest(v, &a, arg, sizeof(a))) return -XEN_EFAULT;
    DomainEvents& e = *v.domain->events;
    long rc;
    {
        LockGuard g(e.lock, plat);
        rc = run(a);
    }
    if (rc == 0 && writes_back && plat.copy_to_guest(v, arg, &a, sizeof(a))) rc = -XEN_EFAULT;
    return rc;
}

} // namespace

long evtchn_op(Hypervisor& hv, Vcpu& v, unsigned cmd, Vaddr arg, EventOut& out)
{
    if (!v.domain->events) return -XEN_ENOSYS;
    Op op(hv, v, out);
    switch (cmd) {
    case EVTCHNOP_alloc_unbound:
        return with_arg<evtchn_alloc_unbound_t>(hv, v, arg, true, [&](auto& a) { return op.alloc_unbound(a); });
    case EVTCHNOP_bind_interdomain:
        return with_arg<evtchn_bind_interdomain_t>(hv, v, arg, true, [&](auto& a) { return op.bind_interdomain(a); });
    case EVTCHNOP_bind_virq:
        return with_arg<evtchn_bind_virq_t>(hv, v, arg, true, [&](auto& a) { return op.bind_virq(a); });
    case EVTCHNOP_bind_ipi:
        return with_arg<evtchn_bind_ipi_t>(hv, v, arg, true, [&](auto& a) { return op.bind_ipi(a); });
    case EVTCHNOP_close:
        return with_arg<evtchn_close_t>(hv, v, arg, false, [&](auto& a) { return op.close(a.port); });
    case EVTCHNOP_send:
        return with_arg<evtchn_send_t>(hv, v, arg, false, [&](auto& a) { return op.send(a.port); });
    case EVTCHNOP_status:
        return with_arg<evtchn_status_t>(hv, v, arg, true, [&](auto& a) { return op.status(a); });
    case EVTCHNOP_bind_vcpu:
        return with_arg<evtchn_bind_vcpu_t>(hv, v, arg, false, [&](auto& a) { return op.bind_vcpu(a); });
    case EVTCHNOP_unmask:
        return with_arg<evtchn_unmask_t>(hv, v, arg, false, [&](auto& a) { return op.unmask(a.port); });
    case EVTCHNOP_reset:
        return with_arg<evtchn_reset_t>(hv, v, arg, false, [&](auto& a) { return op.reset(a.dom); });
    case EVTCHNOP_init_control:
        return with_arg<evtchn_init_control_t>(hv, v, arg, true,
                                               [&](auto& a) { return fifo_init_control(hv, *v.domain, a); });
    case EVTCHNOP_expand_array:
        return with_arg<evtchn_expand_array_t>(
            hv, v, arg, false, [&](auto& a) { return fifo_expand_array(hv, *v.domain, a.array_gfn, out.kicks); });
    case EVTCHNOP_set_priority:
        return with_arg<evtchn_set_priority_t>(
            hv, v, arg, false, [&](auto& a) { return fifo_set_priority(*v.domain->events, a.port, a.priority); });
    default:
        // bind_pirq (no physical IRQs for a domU), reset_cont (newer than 4.17).
        return -XEN_ENOSYS;
    }
}

void evtchn_teardown(Hypervisor& hv, Domain& d)
{
    if (!d.events || !d.nr_vcpus) return;
    EventOut out;
    Op op(hv, d.vcpus[0], out);
    LockGuard g(d.events->lock, hv.platform());
    (void)op.reset(DOMID_SELF);
}

Kicks send_virq(Hypervisor& hv, Domain& d, unsigned vcpu, unsigned virq)
{
    Kicks k;
    DomainEvents* e = d.events;
    if (!e || vcpu >= d.nr_vcpus || virq >= NR_VIRQS) return k;
    LockGuard g(e->lock, hv.platform());
    const unsigned slot_vcpu = virq_is_global(virq) ? 0 : vcpu;
    if (const uint16_t p = e->vcpu[slot_vcpu].virq_port[virq].load(std::memory_order_relaxed)) evtchn_raise(*e, p, k);
    return k;
}

int bind_platform_port(Hypervisor& hv, Domain& d)
{
    DomainEvents* e = d.events;
    if (!e) return -XEN_ENOSYS;
    LockGuard g(e->lock, hv.platform());
    const int p = free_port(*e);
    if (p < 0) return p;
    Port& port = e->ports[p];
    port = Port{};
    port.state = PortState::Interdomain;
    port.platform_end = true;
    return p;
}

Kicks platform_raise(Hypervisor& hv, Domain& d, unsigned port)
{
    Kicks k;
    DomainEvents* e = d.events;
    if (!e || port >= kEvtchnPorts) return k;
    LockGuard g(e->lock, hv.platform());
    if (port < e->valid && e->ports[port].platform_end) evtchn_raise(*e, port, k);
    return k;
}

} // namespace pvmmu
