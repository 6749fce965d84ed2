// Console input (docs/abi.md §10 "Console"): the bytes typed at the serial
// console go to one domain's console ring, `in` between in_cons and in_prod
// (<xen/io/console.h>), and raise its console port (start_info.console.domU
// .evtchn), as xenconsoled does for a Xen domU. The console domain is the
// lowest-numbered domain still running: domain 1, then, once it has shut
// down, the next (Xen's console switch moves among domains by a key; here
// the order of the boot modules decides).
//
// The UART is polled, never waited on: when the console domain's own vCPU
// asks for something that concerns its console or waits (console_io, a send
// on its console port, SCHEDOP_block and SCHEDOP_poll) and when its timer
// fires (event_channel.cc). The UART's receive interrupt may call the same
// poll from its handler's return-to-guest path. Bytes the ring has no room
// for stay in the UART, whose emulator then reads no more: nothing is lost.
#include <atomic>

#include "core/console_rules.h"
#include "core/events.h"
#include "lib/console.h"
#include "lib/raw_lock.h"
#include "mm/core_glue.h"
#include "pv/console.h"
#include "pv/events.h"
#include "pv/run.h"

namespace pvmmu::x86 {

namespace {

// The domains with a console ring, by id (guest_events_init registers each);
// a domain's entry is never cleared: domains are never freed
// (boot/main.cc's g_guests), and a stopped one is skipped.
std::atomic<GuestDomain*> g_consoles[kMaxDomains];

// One producer at a time for in_prod, and one reader of the UART.
RawLock g_input_lock;

GuestDomain* console_domain()
{
    for (auto& slot : g_consoles) {
        GuestDomain* g = slot.load(std::memory_order_acquire);
        if (g && !guest_domain_stopped(g->dom.vcpus[0])) return g;
    }
    return nullptr;
}

} // namespace

void console_input_register(GuestDomain& g)
{
    if (g.dom.id < kMaxDomains && g.console) g_consoles[g.dom.id].store(&g, std::memory_order_release);
}

void console_input_poll(Vcpu& v)
{
    GuestDomain& g = guest_domain(v);
    if (console_domain() != &g) return;
    // v is on its CPU in a hypercall of its own domain: the domain's frames,
    // the ring's among them, are not given back meanwhile (pv/run.cc leave).
    xencons_interface& ring = *g.console;
    std::atomic_ref<XENCONS_RING_IDX> cons_ref(ring.in_cons), prod_ref(ring.in_prod);
    g_input_lock.lock(this_cpu_id());
    // Both indices are in the guest's page and may be anything (console_ring_room).
    const XENCONS_RING_IDX cons = cons_ref.load(std::memory_order_acquire);
    const XENCONS_RING_IDX prod = prod_ref.load(std::memory_order_relaxed);
    size_t n = 0;
    if (const uint32_t room = console_ring_room(cons, prod, sizeof(ring.in))) {
        char buf[sizeof(ring.in)];
        n = console_read(buf, room);
        for (size_t i = 0; i < n; ++i) {
            char& slot = ring.in[MASK_XENCONS_IDX(prod + i, ring.in)];
            std::atomic_ref<char>(slot).store(buf[i], std::memory_order_relaxed);
        }
        prod_ref.store(prod + XENCONS_RING_IDX(n), std::memory_order_release);
    }
    g_input_lock.unlock();
    // The port's vCPU sees the event on its next return to the guest: this
    // one's now, another (the port bound to it by EVTCHNOP_bind_vcpu) is
    // kicked, out of its halt too.
    if (n) event_kick(v, platform_raise(*core(), g.dom, kConsolePort));
}

} // namespace pvmmu::x86
