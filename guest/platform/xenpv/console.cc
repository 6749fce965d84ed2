// The console (docs/abi.md §10). A domU of Xen's toolstack has no console_io
// (a non-debug Xen refuses it from any domain but dom0): it writes to its
// console ring (start_info.console.domU), which xenconsoled in dom0 reads when
// the event channel tells it to. dom0, and any domain of pvmmu (which says so
// by answering pvmmu_op), keep console_io: it reaches the serial line at
// once, with no reader to wait for. The ring's layout: xen/io/console.h.
#include <atomic>

#include <xen/io/console.h>

#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

union alignas(kPageSize) ConsolePage {
    xencons_interface ring;
    uint8_t bytes[kPageSize];
} g_console_page;
static_assert(sizeof(ConsolePage) == kPageSize);
volatile xencons_interface* g_ring;   // nullptr: console_io
evtchn_port_t g_console_port;
// The writers of the ring take turns: it has one producer index. Not the
// library's SpinLock, which needs a Cpu (the first lines may come before any).
std::atomic_flag g_console_busy = ATOMIC_FLAG_INIT;

void console_notify()
{
    evtchn_send_t send{g_console_port};
    hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send));
}

// Bytes into the ring's `out` half, as many as fit at a time; while it is
// full the reader is told again and the vCPU yields to it.
void ring_write(const char* s, size_t n)
{
    volatile xencons_interface& r = *g_ring;
    while (n) {
        const XENCONS_RING_IDX cons = r.out_cons;
        XENCONS_RING_IDX prod = r.out_prod;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);   // read out_cons before reusing its bytes
        size_t room = sizeof(r.out) - (prod - cons);
        if (room == 0) {
            console_notify();
            hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
            continue;
        }
        for (; room && n; --room, --n) r.out[MASK_XENCONS_IDX(prod++, r.out)] = *s++;
        __atomic_thread_fence(__ATOMIC_RELEASE);   // the bytes before the index that publishes them
        r.out_prod = prod;
        console_notify();
    }
}

} // namespace

// The ring where the domain is a domU of Xen: its frame mapped over a page of
// the image's own (as shared_info is), so nothing depends on where the
// builder put it. false when it cannot be mapped (console_io stays).
bool use_console_ring(const start_info_t& si)
{
    pvmmu_facts facts;
    if ((si.flags & SIF_INITDOMAIN) || si.console.domU.mfn == 0 ||
        hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&facts)) == 0)
        return false;
    const uint64_t e = (si.console.domU.mfn << kPageShift) | pte::P | pte::RW | pte::US | pte::A | pte::D | pte::NX;
    if (hypercall(__HYPERVISOR_update_va_mapping, uint64_t(&g_console_page), e, UVMF_INVLPG | UVMF_LOCAL) != 0)
        return false;
    g_console_port = si.console.domU.evtchn;
    g_ring = &g_console_page.ring;
    return true;
}

// Before the domain ends, the reader must have taken every byte: a domain
// that is gone has no ring left to read. Bounded, so a dom0 with no
// xenconsoled does not keep the domain from ending.
void console_drain()
{
    for (unsigned i = 0; g_ring && g_ring->out_cons != g_ring->out_prod && i < 100000; ++i) {
        console_notify();
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    }
}

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest::xenpv;

namespace pvmmu::guest::rt {

void console_write(const char* s, size_t n)
{
    if (!g_ring) {
        hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, n, uint64_t(s));
        return;
    }
    while (g_console_busy.test_and_set(std::memory_order_acquire)) asm volatile("pause");
    ring_write(s, n);
    g_console_busy.clear(std::memory_order_release);
}

} // namespace pvmmu::guest::rt
