// The event-state invariants (core/event_invariants.h). The first three are
// "no event lost": an unmasked pending port must be reachable from its
// vCPU's selector, a selector from evtchn_upcall_pending, and no vCPU may
// stay blocked with an upcall it could take. The rest are the port table's
// own consistency. Under the FIFO ABI the first two become
// (event_fifo_invariants.cc):
// an unmasked pending port must be linked, a linked one reachable from the
// HEAD of a READY queue, and a READY word must have its upcall pending.
#include "core/event_invariants.h"

#include "core/events.h"
#include "event_fifo_invariants.h"

namespace pvmmu {

namespace {

bool bit(const xen_ulong_t* words, unsigned n) { return (words[n / kPortsPerWord] >> (n % kPortsPerWord)) & 1; }

// `any_words`: FIFO words a guest may have written anything into, so a
// closed port's word may read pending.
void check_ports(DomainEvents& e, const Domain& d, InvariantReport& r, bool any_words)
{
    const shared_info_t* s = e.shared();
    for (unsigned p = 0; p < kEvtchnPorts; ++p) {
        const Port& port = e.ports[p];
        const bool fifo = evtchn_fifo_on(e);
        const bool pending = fifo ? evtchn_is_pending(e, p) : bit(s->evtchn_pending, p);
        const bool closed = p >= e.valid || port.state == PortState::Free || port.state == PortState::Reserved;
        if (closed) {
            if (pending && !any_words) r.add(Mfn{0}, p, "event pending on a closed port", 0, 1);
            continue;
        }
        if (port.vcpu >= d.nr_vcpus) r.add(Mfn{0}, p, "port notifies no vCPU of the domain", d.nr_vcpus, port.vcpu);
        else if (!fifo && pending && !bit(s->evtchn_mask, p) &&
                 !((event_vcpu_info(e, port.vcpu)->evtchn_pending_sel >> (p / kPortsPerWord)) & 1))
            r.add(Mfn{0}, p, "event lost: pending and unmasked, selector bit clear", 1, 0);
        if (port.state == PortState::Interdomain && !port.platform_end && port.remote_dom == d.id) {
            const Port& other = e.ports[port.remote_port];
            if (port.remote_port >= e.valid || other.state != PortState::Interdomain || other.remote_port != p)
                r.add(Mfn{0}, p, "interdomain ends disagree", p, other.remote_port);
        }
    }
}

void check_vcpus(DomainEvents& e, const Domain& d, InvariantReport& r)
{
    for (unsigned id = 0; id < d.nr_vcpus; ++id) {
        const vcpu_info_t* vi = event_vcpu_info(e, id);
        if (!evtchn_fifo_on(e) && vi->evtchn_pending_sel && !vi->evtchn_upcall_pending)
            r.add(Mfn{0}, id, "event lost: selector set, no upcall pending", 1, 0);
        if (e.vcpu[id].blocked.load() && vi->evtchn_upcall_pending && !vi->evtchn_upcall_mask)
            r.add(Mfn{0}, id, "wake-up lost: blocked with an upcall due", 0, 1);
        for (unsigned virq = 0; virq < NR_VIRQS; ++virq) {
            const unsigned p = e.vcpu[id].virq_port[virq].load();
            if (!p) continue;
            const Port& port = e.ports[p];
            if (p >= e.valid || port.state != PortState::Virq || port.virq != virq)
                r.add(Mfn{0}, p, "VIRQ binding names a port not bound to it", virq, port.virq);
        }
    }
}

} // namespace

bool check_interdomain_channels(Hypervisor& hv, InvariantReport& report)
{
    for (DomId id = 0; id < kMaxDomains; ++id) {
        const Domain* d = hv.domain(id);
        if (!d || !d->events) continue;
        const DomainEvents& e = *d->events;
        for (unsigned p = 0; p < e.valid; ++p) {
            const Port& port = e.ports[p];
            if (port.state != PortState::Interdomain || port.platform_end || port.remote_dom == id) continue;
            const Domain* rd = hv.domain(port.remote_dom);
            const DomainEvents* re = rd ? rd->events : nullptr;
            const Port* other = re && port.remote_port < re->valid ? &re->ports[port.remote_port] : nullptr;
            if (!other || other->state != PortState::Interdomain || other->remote_dom != id ||
                other->remote_port != p)
                report.add(Mfn{0}, p, "interdomain ends in two domains disagree", port.remote_dom, port.remote_port);
        }
    }
    return report.ok();
}

bool check_event_invariants(Domain& d, InvariantReport& report, FifoWords words)
{
    if (DomainEvents* e = d.events) {
        const bool fifo = evtchn_fifo_on(*e);
        check_ports(*e, d, report, fifo && words == FifoWords::AnyWords);
        check_vcpus(*e, d, report);
        if (fifo && words == FifoWords::Protocol) check_fifo_queues(*e, d, report);
    }
    return report.ok();
}

} // namespace pvmmu
