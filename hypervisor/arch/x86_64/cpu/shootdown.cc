// TLB shootdown; see cpu/shootdown.h.
//
// One mailbox per target CPU, owned by one sender at a time (its lock): the
// sender stores the request and posts it; the target copies it, flushes and
// acknowledges (the sequence numbers: cpu/shootdown_seq.h). A target may
// flush a request twice (a serve interrupted by the IPI's own serve); a
// flush is idempotent, so that is harmless, and only the serve that
// acknowledges a request counts it.
#include "cpu/shootdown.h"

#include <atomic>

#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/shootdown_seq.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "lib/raw_lock.h"
#include "pv/domain.h"
#include "pv/run.h"

namespace pvmmu::x86 {

namespace {

// A request as the target copies it.
struct Posted {
    FlushRequest req;
    const Domain* origin;   // the domain of the vCPU that asked (counters_for)
};

struct alignas(64) Mailbox {
    RawLock sender;
    // The request: atomics, since an interrupted serve may still be copying
    // the previous one while the next sender stores its own (ShootdownSeq
    // drops such a copy).
    std::atomic<FlushKind> kind{FlushKind::All};
    std::atomic<uint64_t> va{0};
    std::atomic<const Domain*> origin{nullptr};
    ShootdownSeq seq;

    // Release and acquire, as ShootdownSeq asks: plain moves on x86.
    void store(const Posted& p)
    {
        kind.store(p.req.kind, std::memory_order_release);
        va.store(p.req.va.v, std::memory_order_release);
        origin.store(p.origin, std::memory_order_release);
    }
    Posted load() const
    {
        const FlushRequest req{kind.load(std::memory_order_acquire), Vaddr{va.load(std::memory_order_acquire)}};
        return Posted{req, origin.load(std::memory_order_acquire)};
    }
};

Mailbox g_box[kMaxCpus];
std::atomic<TlbClock*> g_clock{nullptr};
std::atomic<uint64_t> g_ipis{0};

// n: the counters of the vCPU that asked, when it is the one running here.
void flush_local(const FlushRequest& req, VcpuCounters* n)
{
    if (req.kind == FlushKind::Page) {
        invlpg(req.va.v);
        if (n) n->flush_page.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    TlbClock* clock = g_clock.load(std::memory_order_acquire);
    const uint64_t t = clock ? clock->begin_flush() : 0;
    write_cr3(read_cr3());
    if (clock) clock->record_flush(this_cpu_id(), t);
    if (n) n->flush_all.fetch_add(1, std::memory_order_relaxed);
}

// One round of a wait for another CPU: serve our own mailbox, then PAUSE.
// Every such wait pauses, not only to spare the sibling hyperthread (the
// Intel SDM's "PAUSE—Spin Loop Hint"): a machine whose CPUs take turns on fewer
// host CPUs (an overcommitted host, PAUSE-loop exiting; QEMU's TCG, where
// PAUSE ends the vCPU's turn, target/i386 helper_pause) hands the awaited CPU
// its turn at the PAUSE, and a wait that never pauses can keep it from ever
// running: QEMU 7.2's round-robin -icount scheduler gives the spinning CPU
// the whole budget up to the next timer and the CPUs after it none
// (docs/results.md §13).
void serve_and_pause()
{
    shootdown_serve();
    pause();
}

} // namespace

void shootdown_set_clock(TlbClock* clock) { g_clock.store(clock, std::memory_order_release); }

void shootdown_serve()
{
    Mailbox& b = g_box[this_cpu_id()];
    VcpuCounters* n = nullptr;
    const bool acknowledged = b.seq.serve([&b] { return b.load(); }, [&n](const Posted& p) {
        n = counters_for(p.origin);
        flush_local(p.req, n);
    });
    if (acknowledged && n) n->shootdowns_served.fetch_add(1, std::memory_order_relaxed);
}

void shootdown_flush(CpuMask cpus, FlushRequest req)
{
    const uint32_t self = this_cpu_id();
    const Vcpu* v = this_cpu().vcpu;
    const Domain* origin = v ? v->domain : nullptr;
    VcpuCounters* counted = counters_for(origin);
    uint64_t seq[kMaxCpus] = {};
    CpuMask sent;
    for (CpuId c = 0; c < g_nr_cpus; ++c) {
        if (!cpus.has(c) || c == self) continue;
        if (g_cpus[c].state.load(std::memory_order_acquire) != CpuState::Online) continue;
        Mailbox& b = g_box[c];
        // Serving our own mailbox while we wait for another sender keeps two
        // CPUs that target each other from waiting on each other for ever.
        while (!b.sender.try_lock(self)) serve_and_pause();
        seq[c] = b.seq.post([&b, req, origin] { b.store(Posted{req, origin}); });
        lapic_send_fixed(g_cpus[c].apic_id, kVectorShootdown);
        g_ipis.fetch_add(1, std::memory_order_relaxed);
        if (counted) counted->shootdowns_sent.fetch_add(1, std::memory_order_relaxed);
        sent.set(c);
    }
    if (cpus.has(self)) flush_local(req, counted);
    for (CpuId c = 0; c < g_nr_cpus; ++c) {
        if (!sent.has(c)) continue;
        g_box[c].seq.wait(seq[c], serve_and_pause);
        g_box[c].sender.unlock();
    }
}

uint64_t shootdown_ipis_sent() { return g_ipis.load(std::memory_order_relaxed); }

} // namespace pvmmu::x86
