// The event state of one domain (docs/architecture.md "Events and time"):
// its event-channel ports and their bindings, each vCPU's VIRQ bindings,
// timers and block/poll state, and where its 2-level bitmaps live
// (<xen/xen.h>: shared_info's evtchn_pending and evtchn_mask, each
// vcpu_info's evtchn_pending_sel, evtchn_upcall_pending and
// evtchn_upcall_mask). The core keeps this state and sets the guest-visible
// bits; the platform delivers: it is told which vCPUs to kick (Kicks) and
// never has the core send an IPI or arm a timer itself.
//
// A domain starts with the 2-level ABI and switches to the FIFO ABI
// (core/event_fifo.h) on its first EVTCHNOP_init_control, as Xen; the
// functions below act on whichever it uses.
//
// A platform gives a domain event channels by constructing a DomainEvents
// for it and pointing Domain::events at it; a domain without one answers
// every event hypercall -ENOSYS.
#pragma once

#include <pvmmu/abi.h>

#include "core/domain.h"
#include "core/event_fifo.h"
#include "core/spinlock.h"

namespace pvmmu {

class Hypervisor;

// The 2-level ABI's port count for a 64-bit guest: one bit per port in
// shared_info's two bitmaps of 64 words of 64 bits (<xen/event_channel.h>
// EVTCHN_2L_NR_CHANNELS).
inline constexpr unsigned kEvtchnPorts = EVTCHN_2L_NR_CHANNELS;
static_assert(kEvtchnPorts == 4096 && sizeof(xen_ulong_t) == 8);
inline constexpr unsigned kPortsPerWord = 64;   // bits of one xen_ulong_t
// Ports become valid a bucket at a time as they are first allocated, as in
// Xen; a port past the last valid bucket is -EINVAL to every sub-op, one in
// it but never bound is "closed" (docs/abi.md "Event channels").
inline constexpr unsigned kPortsPerBucket = 64;
// A deadline that never comes (system time in ns, as vcpu_time_info counts).
inline constexpr uint64_t kNever = ~uint64_t(0);
// Xen's default tick of every PV vCPU (100 Hz) until the guest stops it
// (VCPUOP_stop_periodic_timer), as Linux does first thing.
inline constexpr uint64_t kDefaultPeriodNs = 10'000'000;

enum class PortState : uint8_t { Free, Reserved, Unbound, Interdomain, Virq, Ipi };

struct Port {
    PortState state = PortState::Free;
    uint8_t virq = 0;            // Virq: which
    uint16_t vcpu = 0;           // the vCPU it notifies
    DomId remote_dom = 0;        // Unbound: who may bind it; Interdomain: the other end's domain
    uint16_t remote_port = 0;    // Interdomain: the other end
    // Interdomain with the platform as the other end (the console):
    // the guest's send notifies the platform, the guest cannot close it.
    bool platform_end = false;
    // FIFO ABI: the queue priority (EVTCHNOP_set_priority).
    uint8_t priority = EVTCHN_FIFO_PRIORITY_DEFAULT;
    // FIFO ABI: an event raised while the port had no event word yet,
    // raised again when EVTCHNOP_expand_array adds its page (Xen's
    // evtchn->pending).
    bool fifo_pending = false;
    // FIFO ABI: an event left pending and unlinked because its vCPU had no
    // control block yet. Xen drops it (a guest unmasks nothing before its
    // vCPU's init_control); the event invariant checker does not count it lost.
    bool fifo_dropped = false;
};

// The vCPUs of the domain (bit i: vCPU i) that a core call made need the
// platform: each one's evtchn_upcall_pending went from 0 to 1 or it was woken
// from SCHEDOP_block / SCHEDOP_poll. The platform delivers the upcall when the
// vCPU next returns to the guest, sends an IPI if it runs on another CPU and
// wakes it if halted.
struct Kicks {
    uint64_t vcpus = 0;
    void add(unsigned v) { vcpus |= uint64_t(1) << v; }
    bool has(unsigned v) const { return (vcpus >> v) & 1; }
};

// Per vCPU. The timer fields are system time in ns; kNever: not armed.
struct VcpuEvents {
    std::atomic<uint16_t> virq_port[NR_VIRQS] = {};     // 0: not bound
    std::atomic<vcpu_info_t*> info{nullptr};            // VCPUOP_register_vcpu_info's, or null
    // Where a vCPU past shared_info's XEN_LEGACY_MAX_VCPUS slots that
    // registered none keeps its bits (masked, as Xen's dummy vcpu_info).
    vcpu_info_t spare{};
    std::atomic<uint64_t> singleshot{kNever};
    std::atomic<uint64_t> period{0};                    // 0: no periodic timer
    std::atomic<uint64_t> periodic_next{kNever};
    std::atomic<uint64_t> poll_deadline{kNever};
    std::atomic<int32_t> poll_port{0};                  // >0 the one polled port; -1 several
    std::atomic<bool> blocked{false};
};

class DomainEvents {
public:
    // `shared`: the domain's shared_info, where the hypervisor may write
    // (bare metal: the direct map of a held frame; tests: host memory).
    explicit DomainEvents(shared_info_t* shared, uint64_t default_period_ns = kDefaultPeriodNs);

    DomainEvents(const DomainEvents&) = delete;
    DomainEvents& operator=(const DomainEvents&) = delete;

    shared_info_t* shared() const { return shared_; }

    // Xen's event_lock: held by every sub-op and every raise, so a port's
    // binding never changes under a raise. Never taken by a guest; the bits
    // in guest memory are changed only by atomic read-modify-writes.
    SpinLock lock;
    Port ports[kEvtchnPorts];
    unsigned valid = kPortsPerBucket;          // ports [0, valid) exist
    unsigned max_port = kEvtchnPorts - 1;      // the highest a free port search may take
    VcpuEvents vcpu[kMaxVcpus];
    std::atomic<uint64_t> poll_mask{0};        // vCPUs in SCHEDOP_poll
    FifoEvents fifo;                           // the FIFO ABI's, once fifo.on

private:
    shared_info_t* shared_;
};

// The vcpu_info the core writes for vCPU `id`: the registered one, else
// shared_info's slot, else the spare.
vcpu_info_t* event_vcpu_info(DomainEvents& e, unsigned id);

// VCPUOP_register_vcpu_info's new place for vCPU `id` (the platform copies
// the old contents first, as Xen does); null goes back to shared_info's slot.
void set_event_vcpu_info(DomainEvents& e, unsigned id, vcpu_info_t* info);

// The protocol on the guest-visible bits, e.lock held: the 2-level one
// (core/src/evtchn_2l.cc), or the FIFO one once the domain switched
// (core/src/evtchn_fifo.cc: the port's event word, its queue, the READY bit,
// then the same upcall). Under 2-level, raising sets the port's pending bit,
// then, unless masked, its word's bit in the notified vCPU's evtchn_pending_sel, then
// evtchn_upcall_pending, each by an atomic test-and-set that stops at a bit
// already set: a guest that clears them in the opposite order (upcall,
// selector, then the port) concurrently never loses an event.
void evtchn_raise(DomainEvents& e, unsigned port, Kicks& k);
void evtchn_unmask_port(DomainEvents& e, unsigned port, Kicks& k);
void evtchn_clear_pending(DomainEvents& e, unsigned port);
bool evtchn_is_pending(const DomainEvents& e, unsigned port);
// Sets evtchn_upcall_pending of vCPU `id`; a 0 -> 1 change kicks and wakes it.
void evtchn_mark_upcall(DomainEvents& e, unsigned id, Kicks& k);
// Wakes vCPU `id` from block or poll (a kick if it was blocked).
void evtchn_unblock(DomainEvents& e, unsigned id, Kicks& k);
// Wakes the vCPUs polling `port` (or several ports), masked or not (Xen's
// evtchn_check_pollers): what a raise does when the port was not pending.
void evtchn_wake_pollers(DomainEvents& e, unsigned port, Kicks& k);
// Whether the domain uses the FIFO ABI (may be read without e.lock).
inline bool evtchn_fifo_on(const DomainEvents& e) { return e.fifo.on.load(std::memory_order_acquire); }

// Drops what the FIFO ABI holds (its control blocks' and event array's
// frames) and goes back to 2-level: EVTCHNOP_reset, and a domain's
// teardown (core/domain_teardown.h relinquish_domain does it while
// Domain::events is set; a platform that clears Domain::events first calls
// it itself). Nothing when the domain uses 2-level.
void release_event_frames(Hypervisor& hv, DomainEvents& e);

// --- the platform's side ---------------------------------------------------

// Raises VIRQ `virq` of vCPU `vcpu` (VIRQ_DEBUG; a global VIRQ such as
// VIRQ_CONSOLE is bound on vCPU 0 and goes to its port's vCPU). Nothing when
// unbound, as Xen. Takes e.lock: call it from the return-to-guest path or a
// platform loop, never from an interrupt handler that may have interrupted
// the core.
Kicks send_virq(Hypervisor& hv, Domain& d, unsigned vcpu, unsigned virq);

// A port whose other end is the platform (the console's
// start_info.console.domU.evtchn): Interdomain, notifying vCPU 0. The port
// or a negated errno (-ENOSPC). The guest's EVTCHNOP_send on it is reported
// in EventOut::platform_port; platform_raise raises it toward the guest.
int bind_platform_port(Hypervisor& hv, Domain& d);
Kicks platform_raise(Hypervisor& hv, Domain& d, unsigned port);

} // namespace pvmmu
