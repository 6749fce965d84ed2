// TLB shootdown; see arch/shootdown.h.
//
// One mailbox per target CPU, owned by one sender at a time (its lock): the
// sender stores the request and posts it; the target flushes and acknowledges
// (the sequence numbers: arch/shootdown_seq.h). A target may serve a request
// twice (IPI handler and a spin-wait racing on the same CPU); a flush is
// idempotent, so that is harmless.
#include "arch/shootdown.h"

#include <atomic>

#include "arch/guest.h"
#include "arch/lapic.h"
#include "arch/percpu.h"
#include "arch/raw_lock.h"
#include "arch/shootdown_seq.h"
#include "arch/traps.h"
#include "arch/x86.h"

namespace pvmmu::x86 {

namespace {

struct alignas(64) Mailbox {
    RawLock sender;
    FlushRequest req;
    const Domain* origin = nullptr;   // the domain of the vCPU that asked (counters_for)
    ShootdownSeq seq;
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

} // namespace

void shootdown_set_clock(TlbClock* clock) { g_clock.store(clock, std::memory_order_release); }

void shootdown_serve()
{
    Mailbox& b = g_box[this_cpu_id()];
    b.seq.serve([&b] {
        VcpuCounters* n = counters_for(b.origin);
        flush_local(b.req, n);
        if (n) n->shootdowns_served.fetch_add(1, std::memory_order_relaxed);
    });
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
        while (!b.sender.try_lock(self)) shootdown_serve();
        b.req = req;
        b.origin = origin;
        seq[c] = b.seq.post();
        lapic_send_fixed(g_cpus[c].apic_id, kVectorShootdown);
        g_ipis.fetch_add(1, std::memory_order_relaxed);
        if (counted) counted->shootdowns_sent.fetch_add(1, std::memory_order_relaxed);
        sent.set(c);
    }
    if (cpus.has(self)) flush_local(req, counted);
    for (CpuId c = 0; c < g_nr_cpus; ++c) {
        if (!sent.has(c)) continue;
        g_box[c].seq.wait(seq[c], [] {
            shootdown_serve();
            pause();
        });
        g_box[c].sender.unlock();
    }
}

uint64_t shootdown_ipis_sent() { return g_ipis.load(std::memory_order_relaxed); }

} // namespace pvmmu::x86
