// Console input (docs/abi.md §10 "Console"): a line typed at the launcher
// (here its piped stdin, `pvmmu-run --console`; tests/qemu/console_test.sh)
// reaches the guest's console ring, `in` between in_cons and in_prod, and
// raises the console port in shared_info, as xenconsoled does for a Xen domU.
// The guest reads the line, echoes it, and checks it is kConsoleLine; then,
// as Linux's hvc driver does, it sends on the port once it has taken input.
// pvmmu only: on Xen the domU's input comes from xenconsoled.
#include "tiny_guest.h"

#include <xen/sched.h>

using namespace tiny;

namespace {

// What console_test.sh pipes into pvmmu-run.
constexpr char kConsoleLine[] = "typed at pvmmu-run";

// At most this many waits for the line (each a SCHEDOP_poll on the console
// port, which polls the UART): the run's timeout, not this, is what a
// missing line meets first under TCG.
constexpr unsigned long kMaxWaits = 50'000'000;

bool pending(volatile const shared_info_t* sh, evtchn_port_t p) { return (sh->evtchn_pending[p / 64] >> (p % 64)) & 1; }

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    write("console guest: waiting for a line on the console\n");
    const uint64_t base = p2m(si)[0];
    auto* ring = reinterpret_cast<volatile xencons_interface*>(si->pt_base + ((si->console.domU.mfn - base) << 12));
    auto* sh = reinterpret_cast<volatile shared_info_t*>(si->pt_base + (((si->shared_info >> 12) - base) << 12));
    evtchn_port_t port = si->console.domU.evtchn;
    char line[128];
    size_t n = 0;
    bool whole = false, raised = false;
    XENCONS_RING_IDX cons = ring->in_cons;
    for (unsigned long w = 0; w < kMaxWaits && !whole; ++w) {
        sched_poll_t poll{};
        set_xen_guest_handle(poll.ports, &port);
        poll.nr_ports = 1;
        check("SCHEDOP_poll on the console port", hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&poll)), 0);
        const XENCONS_RING_IDX prod = ring->in_prod;
        if (prod == cons) continue;
        raised = raised || pending(sh, port);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        for (; cons != prod && !whole; ++cons) {
            const char c = ring->in[MASK_XENCONS_IDX(cons, ring->in)];
            if (c == '\n') whole = true;
            else if (n < sizeof(line) - 1) line[n++] = c;
        }
        __atomic_thread_fence(__ATOMIC_RELEASE);
        ring->in_cons = cons;
        evtchn_send_t send{port};
        check("EVTCHNOP_send after taking input",
              hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send)), 0);
    }
    line[n] = 0;
    check("a whole line came", whole, 1);
    check("the console port was raised with it", raised, 1);
    write("console guest: read: ");
    write(line);
    write("\n");
    bool same = n == sizeof(kConsoleLine) - 1;
    for (size_t i = 0; same && i < n; ++i) same = line[i] == kConsoleLine[i];
    check("the line is the one typed", same, 1);
    if (!g_failed) write("Test result: SUCCESS\n");
    finish("console guest");
}
