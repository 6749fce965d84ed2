// The core fixture (domain 1, two vCPUs) with event channels: a shared_info
// in host memory stands for the guest's frame, so a test reads the bits a
// guest would. Sub-ops are issued with host structs as guest arguments (the
// DirectPlatform's guest addresses are host addresses).
#pragma once

#include <memory>

#include "core/event_ops.h"
#include "support/core_fixture.h"

namespace pvmmu::test {

class EventTest : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        shared = std::make_unique<shared_info_t>();
        *shared = shared_info_t{};
        ev = std::make_unique<DomainEvents>(shared.get());
        d->events = ev.get();
    }

    template <class T>
    long op(unsigned cmd, T& arg, Vcpu* v = nullptr)
    {
        out = EventOut{};
        return evtchn_op(hv(), v ? *v : v0(), cmd, Vaddr{uint64_t(&arg)}, out);
    }
    long op_bad_pointer(unsigned cmd)
    {
        out = EventOut{};
        return evtchn_op(hv(), v0(), cmd, Vaddr{kBadGuestPtr}, out);
    }

    // Set-up helpers that must succeed; each returns the port.
    unsigned alloc_unbound(DomId remote = DOMID_SELF)
    {
        evtchn_alloc_unbound_t a{DOMID_SELF, remote, 0};
        EXPECT_EQ(op(EVTCHNOP_alloc_unbound, a), 0);
        return a.port;
    }
    unsigned bind_ipi(unsigned vcpu)
    {
        evtchn_bind_ipi_t b{vcpu, 0};
        EXPECT_EQ(op(EVTCHNOP_bind_ipi, b), 0);
        return b.port;
    }
    unsigned bind_virq(unsigned virq, unsigned vcpu)
    {
        evtchn_bind_virq_t b{virq, vcpu, 0};
        EXPECT_EQ(op(EVTCHNOP_bind_virq, b), 0);
        return b.port;
    }
    long send(unsigned port)
    {
        evtchn_send_t s{port};
        return op(EVTCHNOP_send, s);
    }
    evtchn_status_t status(unsigned port)
    {
        evtchn_status_t s{};
        s.dom = DOMID_SELF;
        s.port = port;
        EXPECT_EQ(op(EVTCHNOP_status, s), 0);
        return s;
    }

    // Domain 2: 64 frames, one vCPU on CPU 2, no event state of its own yet.
    Domain* second_domain()
    {
        DomainLayout l2;
        return m.create_domain(2, 64, 1, l2, 2);
    }
    // Domain 2 with event channels of its own (shared2, ev2); null if it
    // could not be made.
    Domain* second_domain_with_events()
    {
        Domain* d2 = second_domain();
        if (!d2) return nullptr;
        shared2 = std::make_unique<shared_info_t>();
        *shared2 = shared_info_t{};
        ev2 = std::make_unique<DomainEvents>(shared2.get());
        d2->events = ev2.get();
        return d2;
    }
    // Domain 2's port offered to `remote`, opened from its own vCPU 0.
    unsigned alloc_unbound_in(Domain& d2, DomId remote)
    {
        EventOut o;
        evtchn_alloc_unbound_t a{DOMID_SELF, remote, 0};
        EXPECT_EQ(evtchn_op(hv(), d2.vcpus[0], EVTCHNOP_alloc_unbound, Vaddr{uint64_t(&a)}, o), 0);
        return a.port;
    }

    bool pending(unsigned port) const { return (shared->evtchn_pending[port / 64] >> (port % 64)) & 1; }
    void mask(unsigned port) { shared->evtchn_mask[port / 64] |= 1ul << (port % 64); }
    vcpu_info_t& info(unsigned vcpu) { return shared->vcpu_info[vcpu]; }
    bool selected(unsigned vcpu, unsigned port) { return (info(vcpu).evtchn_pending_sel >> (port / 64)) & 1; }

    std::unique_ptr<shared_info_t> shared, shared2;
    std::unique_ptr<DomainEvents> ev, ev2;
    EventOut out;
};

} // namespace pvmmu::test
