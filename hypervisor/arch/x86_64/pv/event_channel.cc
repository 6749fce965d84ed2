// The bare-metal side of the core's event channels, timers and blocking
// (core/event_ops.h; docs/architecture.md §9 "Events and time"): each
// domain's DomainEvents over its shared_info, the console ring's port bound
// to the platform, and the hypercalls event_channel_op (both ABIs: the FIFO
// ABI's control blocks and event array are guest frames the core reaches
// through the direct map, core/event_fifo.h), set_timer_op, the
// VCPUOP timers and SCHEDOP yield/block/poll handed to the core with the
// guests' system time (boot/time.h). The platform's part here is what
// follows a call: printing the console ring when the guest sends on its
// port, kicking the vCPUs a call woke or gave an upcall (of the caller's
// domain, or of the other end's of an interdomain channel), and halting a vCPU
// that blocked; timers and upcalls reach the guest on the returns to it that
// a per-CPU mark asks to look (pv/events.h, pv/event_delivery.cc).
#include <atomic>
#include <new>

#include <pvmmu/abi.h>

#include "boot/time.h"
#include "core/console_rules.h"
#include "core/event_ops.h"
#include "mm/core_glue.h"
#include "pv/console.h"
#include "pv/events.h"
#include "pv/hypercall.h"
#include "pv/surface.h"
#include "pv/watchdog.h"

namespace pvmmu::x86 {

namespace {

// The console ring's output (<xen/io/console.h>): the bytes between out_cons
// and out_prod, as console_ring_check takes them; the indices are only ever
// used masked. The bytes are copied out before they are printed, and
// out_cons then says they were read.
long console_ring_drain(Vcpu& v)
{
    xencons_interface& ring = *guest_domain(v).console;
    std::atomic_ref<XENCONS_RING_IDX> cons_ref(ring.out_cons), prod_ref(ring.out_prod);
    XENCONS_RING_IDX cons = cons_ref.load(std::memory_order_relaxed);
    const XENCONS_RING_IDX prod = prod_ref.load(std::memory_order_acquire);
    if (long rc = console_ring_check(cons, prod, sizeof(ring.out))) return rc;
    char buf[sizeof(ring.out)];
    size_t n = 0;
    for (; cons != prod; ++cons)
        buf[n++] = std::atomic_ref<char>(ring.out[MASK_XENCONS_IDX(cons, ring.out)]).load(std::memory_order_relaxed);
    guest_console_put(v, buf, n);
    cons_ref.store(cons, std::memory_order_release);
    return 0;
}

// What the platform does after a core call (the table of
// docs/architecture.md §9): the caller's own upcall is bounced on this
// hypercall's return (guest_return_events), another vCPU's CPU is kicked,
// and a block or poll that waits halts here until it is woken.
long finish(Vcpu& v, long rc, const EventOut& out)
{
    if (out.platform_port == kConsolePort) {
        if (rc == 0) rc = console_ring_drain(v);
        console_input_poll(v);   // Linux sends on the port after taking input, too
    }
    event_kick(v, out.kicks);
    event_kick_remote(out.remote_dom, out.remote_kicks);
    if (out.block) block_wait(v);
    return rc;
}

} // namespace

int guest_events_init(GuestDomain& g)
{
    // Every vcpu_info starts with its upcall masked, as Xen's domain builder
    // (libxenguest) leaves shared_info.
    for (vcpu_info& vi : g.shared->vcpu_info) vi.evtchn_upcall_mask = 1;
    g.dom.events = new (g.events_mem) DomainEvents(g.shared);
    const int port = bind_platform_port(*core(), g.dom);
    if (port != int(kConsolePort)) return -XEN_ENOSPC;
    console_input_register(g);
    return 0;
}

long do_event_channel_op(Vcpu& v, HypercallFrame& f)
{
    const uint32_t cmd = uint32_t(f.arg[0]);   // an int in Xen's prototype
    if (!arch_subop_known(__HYPERVISOR_event_channel_op, cmd)) return -XEN_ENOSYS;
    EventOut out;
    return finish(v, evtchn_op(*core(), v, cmd, Vaddr{f.arg[1]}, out), out);
}

long do_set_timer_op(Vcpu& v, HypercallFrame& f)
{
    return set_timer_op(*core(), v, f.arg[0], system_time_now());
}

long event_vcpu_timer_op(Vcpu& v, Vcpu& t, unsigned cmd, uint64_t arg)
{
    const long rc = vcpu_timer_op(*core(), v, t, cmd, Vaddr{arg}, system_time_now());
    // Another vCPU's periodic timer: that vCPU's CPU arms its timer for the
    // new deadline on its next return that checks the timers, and the kick
    // makes that return come at once (pv/events.h guest_return_check_due).
    if (rc == 0 && &t != &v) {
        Kicks k;
        k.add(t.id);
        event_kick(v, k);
    }
    return rc;
}

long event_sched_op(Vcpu& v, unsigned cmd, uint64_t arg)
{
    // A vCPU about to wait: what it printed is seen (a prompt), and input
    // already typed is in its ring and pending before the core decides
    // whether it waits.
    if (cmd == SCHEDOP_block || cmd == SCHEDOP_poll) {
        guest_console_flush_partial(v);
        console_input_poll(v);
    }
    EventOut out;
    return finish(v, sched_op(*core(), v, cmd, Vaddr{arg}, system_time_now(), out), out);
}

} // namespace pvmmu::x86
