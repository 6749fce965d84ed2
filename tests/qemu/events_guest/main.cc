// Events and time delivered while vCPUs run and block (docs/architecture.md
// §9, docs/abi.md §12.6), on pvmmu (qemu_guest_events_2, _4) and on Xen 4.17
// as dom0 (xen_events_guest), with the same checks:
// - timer: with the periodic tick stopped, a single-shot deadline 50 ms
//   ahead and VIRQ_TIMER bound, one SCHEDOP_block returns only once the
//   pvclock has passed the deadline, within a (generous) bound, the tick
//   delivered to the event callback; on pvmmu the vCPU's CPU halted
//   meanwhile (pvmmu_vcpu_counters.halts), so the wait was no busy loop;
//   then SCHEDOP_poll of an idle port returns at its timeout, not before;
// - wake: vCPU 1 blocks; an event vCPU 0 sends on an IPI port bound to it
//   wakes it, through one SCHEDOP_block, and it sees the event once;
// - page faults only: vCPU 1 spins on writes to one of its L1 entries, each
//   a #PF the hypervisor emulates (its only exits), with its periodic tick
//   stopped; vCPU 0 then sets vCPU 1's periodic timer (VCPUOP_
//   set_periodic_timer), and VIRQ_TIMER reaches vCPU 1 within a bound;
//   then an event vCPU 0 sends to it reaches it too (pvmmu: the kick, from
//   vCPU 0's hypercall, makes vCPU 1's CPU look; docs/abi.md §12.6);
// - stress: every vCPU sends events to every other on its own IPI ports for
//   each ordered pair (kPortsPerPair of them, so that several are in flight),
//   the next on a port once the previous one has been received, g_events in all (vcpus=N: 2 or 4), while receiving the others'
//   in its upcall, from a hypercall's return or an interrupt (the kick):
//   none lost (every pair's counts equal at the end: an event raised on
//   the wrong vCPU is lost to the right one), none duplicated (a count
//   above what was sent).
// vCPU i runs with the vcpu_info of shared_info's slot i.

#include "tiny_guest.h"
#include "tiny_events.h"

#include <xen/event_channel.h>
#include <xen/callback.h>
#include <xen/vcpu.h>

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))

namespace {

constexpr unsigned kMaxVcpus = 4;
// Events of the stress test, all vCPUs together: 10^4 by default, which
// takes a few seconds of TCG; the word events=N asks for N (10^5 takes
// about 45 s of TCG on a loaded 2-core machine, docs/architecture.md §9).
unsigned g_events = 10000;
constexpr uint64_t kMs = 1000000;
constexpr unsigned kPortsPerPair = 8;
constexpr unsigned kWords = 4;               // ports below 256 take part
constexpr unsigned kPorts = kWords * 64;

volatile shared_info_t* g_sh;
unsigned g_nr;   // vCPUs taking part

// What the upcalls saw, by port (each bound to one vCPU, whose upcall
// alone takes it).
volatile uint64_t g_seen[kPorts];
volatile uint64_t g_upcalls[kMaxVcpus];
xen_ulong_t g_mine[kMaxVcpus][kWords];     // the ports bound to each vCPU

// The stress test's ports and counts: g_port[i][j][k] is bound to vCPU j,
// and only vCPU i sends on it.
evtchn_port_t g_port[kMaxVcpus][kMaxVcpus][kPortsPerPair];
volatile uint64_t g_sent[kMaxVcpus][kMaxVcpus][kPortsPerPair];
volatile bool g_duplicate, g_stuck;
volatile unsigned g_done;                  // vCPUs done sending
volatile unsigned g_phase;                 // what vCPUs 1.. do next (below)
volatile uint64_t g_blocks[kMaxVcpus];     // SCHEDOP_block calls made

// The page-fault test (phase 2): the L1 entry vCPU 1 writes, through the
// L1's read-only mapping, with the value it holds; the writes made; when
// vCPU 1 is to stop.
volatile uint64_t* g_pf_pte;
uint64_t g_pf_val;
volatile uint64_t g_pf_writes;
volatile bool g_pf_stop;
alignas(4096) volatile uint64_t g_pf_page[512];

alignas(16) uint8_t g_stacks[kMaxVcpus][16384];

} // namespace

// The event callback, one entry per vCPU (tiny_events.h).
TINY_EVENT_CALLBACKS(events_callbacks, events_upcall);

// Linux's order: the upcall flag, then the selector, then each pending and
// unmasked port bound to this vCPU, each cleared before it is handled. A
// word of the bitmap holds other vCPUs' ports too: those are theirs to
// take (their own selector bit and upcall say so), as Linux leaves them.
extern "C" void events_upcall(unsigned vcpu)
{
    volatile vcpu_info_t* vi = &g_sh->vcpu_info[vcpu];
    g_upcalls[vcpu] = g_upcalls[vcpu] + 1;
    while (__atomic_exchange_n(&vi->evtchn_upcall_pending, uint8_t(0), __ATOMIC_SEQ_CST)) {
        xen_ulong_t sel = __atomic_exchange_n(&vi->evtchn_pending_sel, xen_ulong_t(0), __ATOMIC_SEQ_CST);
        while (sel) {
            const unsigned w = unsigned(__builtin_ctzll(sel));
            sel &= sel - 1;
            if (w >= kWords) continue;
            xen_ulong_t bits = g_sh->evtchn_pending[w] & ~g_sh->evtchn_mask[w] & g_mine[vcpu][w];
            while (bits) {
                const unsigned b = unsigned(__builtin_ctzll(bits));
                bits &= bits - 1;
                __atomic_fetch_and(&g_sh->evtchn_pending[w], ~(xen_ulong_t(1) << b), __ATOMIC_SEQ_CST);
                __atomic_fetch_add(&g_seen[w * 64 + b], 1, __ATOMIC_SEQ_CST);
            }
        }
    }
}

namespace {

long evtchn(unsigned cmd, void* arg) { return hypercall(__HYPERVISOR_event_channel_op, cmd, uint64_t(arg)); }
long send(evtchn_port_t p)
{
    evtchn_send_t s{p};
    return evtchn(EVTCHNOP_send, &s);
}
long block()
{
    return hypercall(__HYPERVISOR_sched_op, SCHEDOP_block, 0);
}

evtchn_port_t bind_ipi(unsigned vcpu)
{
    evtchn_bind_ipi_t b{vcpu, 0};
    check("EVTCHNOP_bind_ipi", evtchn(EVTCHNOP_bind_ipi, &b), 0);
    check("  a port below 256", b.port < kPorts, 1);
    if (b.port < kPorts) __atomic_fetch_or(&g_mine[vcpu][b.port / 64], xen_ulong_t(1) << (b.port % 64), __ATOMIC_SEQ_CST);
    return b.port;
}

// vCPU `vcpu`'s pvclock: system time in ns.
uint64_t now(unsigned vcpu) { return pvclock_ns(g_sh->vcpu_info[vcpu].time); }

// pvmmu's count of v's halts, or ~0 on Xen (no pvmmu_op).
uint64_t halts(unsigned v)
{
    static pvmmu_vcpu_counters c;
    return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, v, uint64_t(&c)) == 0 ? c.halts : ~0ull;
}

void set_mask(unsigned vcpu, bool masked) { g_sh->vcpu_info[vcpu].evtchn_upcall_mask = masked; }

void timer_test()
{
    evtchn_bind_virq_t t{VIRQ_TIMER, 0, 0};
    check("EVTCHNOP_bind_virq(VIRQ_TIMER, vCPU 0)", evtchn(EVTCHNOP_bind_virq, &t), 0);
    check("  a port below 64", t.port < 64, 1);
    if (t.port >= 64) return;
    __atomic_fetch_or(&g_mine[0][0], xen_ulong_t(1) << t.port, __ATOMIC_SEQ_CST);
    check("VCPUOP_stop_periodic_timer", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 0, 0), 0);
    // A periodic tick that came before the stop is no part of this test.
    volatile vcpu_info_t* vi = &g_sh->vcpu_info[0];
    __atomic_fetch_and(&g_sh->evtchn_pending[t.port / 64], ~(xen_ulong_t(1) << (t.port % 64)), __ATOMIC_SEQ_CST);
    vi->evtchn_pending_sel = 0;
    vi->evtchn_upcall_pending = 0;
    const uint64_t halts0 = halts(0);
    const uint64_t seen0 = g_seen[t.port];
    const uint64_t deadline = now(0) + 50 * kMs;
    vcpu_set_singleshot_timer_t s{deadline, 0};
    check("VCPUOP_set_singleshot_timer 50 ms ahead",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_set_singleshot_timer, 0, uint64_t(&s)), 0);
    unsigned blocks = 0;
    // The halt is checked only when the block began well before the
    // deadline: QEMU on a loaded host may stop a vCPU for longer than that.
    const bool early = now(0) + 25 * kMs < deadline;
    while (g_seen[t.port] == seen0 && blocks < 1000) {
        ++blocks;
        check("SCHEDOP_block", block(), 0);
    }
    const uint64_t woke = now(0);
    set_mask(0, true);
    check("  VIRQ_TIMER delivered once", long(g_seen[t.port] - seen0), 1);
    check("  by one SCHEDOP_block (no early return)", long(blocks), 1);
    check("  not before the deadline (pvclock)", woke >= deadline, 1);
    // A bound, not a measurement: TCG on a loaded machine is slow.
    check("  within 2 s of it", woke - deadline < 2000 * kMs, 1);
    write("events guest: timer: woke ");
    write_hex((woke - deadline) / 1000);
    write(" us after the deadline\n");
    const uint64_t halts1 = halts(0);
    if (halts0 != ~0ull && early) check("  pvmmu: the CPU halted meanwhile (no busy wait)", halts1 > halts0, 1);

    // SCHEDOP_poll of the (idle) timer port with a timeout 10 ms ahead.
    evtchn_port_t ports[1] = {t.port};
    sched_poll_t poll{};
    set_xen_guest_handle(poll.ports, ports);
    poll.nr_ports = 1;
    poll.timeout = now(0) + 50 * kMs;
    const bool poll_early = now(0) + 25 * kMs < poll.timeout;
    check("SCHEDOP_poll of an idle port, timeout 50 ms ahead",
          hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&poll)), 0);
    check("  returns once the pvclock has passed the timeout", now(0) >= poll.timeout, 1);
    if (halts1 != ~0ull && poll_early) check("  pvmmu: the CPU halted meanwhile", halts(0) > halts1, 1);
}

// vCPUs 1.. in a loop: block until vCPU 0 moves g_phase on, then do it.
[[noreturn]] void secondary(unsigned me);

void start_vcpus(const start_info_t* si)
{
    for (unsigned i = 1; i < g_nr; ++i) {
        static vcpu_guest_context_t ctx;
        ctx = vcpu_guest_context_t{};
        ctx.flags = VGCF_in_kernel;   // Xen: else it starts in (absent) user mode
        ctx.user_regs.rip = uint64_t(&secondary);
        ctx.user_regs.rdi = i;
        ctx.user_regs.rsp = uint64_t(g_stacks[i] + sizeof(g_stacks[i]) - 8);
        ctx.user_regs.cs = FLAT_KERNEL_CS64;
        ctx.user_regs.ss = FLAT_KERNEL_SS;
        ctx.kernel_ss = FLAT_KERNEL_SS;
        ctx.kernel_sp = ctx.user_regs.rsp;
        ctx.event_callback_eip = uint64_t(events_callbacks + 16 * i);
        ctx.ctrlreg[3] = xen_pfn_to_cr3(p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12]);
        check("VCPUOP_initialise", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, i, uint64_t(&ctx)), 0);
        check("VCPUOP_up", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, i, 0), 0);
        while (!g_blocks[i]) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    }
}

void wait_us(unsigned vcpu, uint64_t us)
{
    const uint64_t until = now(vcpu) + us * 1000;
    while (now(vcpu) < until) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
}

void wake_test()
{
    const evtchn_port_t p = bind_ipi(1);
    const uint64_t halts0 = halts(1);
    const uint64_t blocks0 = g_blocks[1];
    const uint64_t seen0 = g_seen[p];
    wait_us(0, 20000);   // vCPU 1 well inside its block
    check("vCPU 1 still blocked before the send", g_blocks[1] == blocks0 && g_seen[p] == seen0, 1);
    check("EVTCHNOP_send to vCPU 1, blocked", send(p), 0);
    const uint64_t until = now(0) + 2000 * kMs;
    while (g_seen[p] == seen0 && now(0) < until) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("  vCPU 1 woke and saw the event once", long(g_seen[p] - seen0), 1);
    // Since it started: a vCPU that waited by spinning never halts.
    if (halts0 != ~0ull) check("  pvmmu: vCPU 1's CPU halted while it waited", halts(1) > 0, 1);
}

// One vCPU's share of the stress test: each of its ports to the others gets
// its next event once the previous one was seen.
void stress(unsigned me)
{
    const unsigned share = g_events / g_nr;
    unsigned sent = 0;
    uint64_t last_progress = now(me);
    while (sent < share && !g_stuck) {
        bool progress = false;
        for (unsigned j = 0; j < g_nr && sent < share; ++j)
            for (unsigned k = 0; k < kPortsPerPair && j != me && sent < share; ++k) {
                const evtchn_port_t p = g_port[me][j][k];
                const uint64_t got = g_seen[p], want = g_sent[me][j][k];
                if (got > want) g_duplicate = true;
                if (got != want) continue;
                g_sent[me][j][k] = want + 1;
                if (send(p) != 0) g_stuck = true;
                ++sent;
                progress = true;
            }
        if (progress) {
            last_progress = now(me);
        } else if (now(me) - last_progress > 10000 * kMs) {
            g_stuck = true;   // an event lost: its port never moves on
        }
    }
    __atomic_fetch_add(&g_done, 1, __ATOMIC_SEQ_CST);
}

// vCPU 1 in phase 2: its periodic tick stopped, events unmasked, then
// nothing but emulated page-table writes until vCPU 0 says stop.
void pf_spin(unsigned me)
{
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, me, 0);
    set_mask(me, false);
    while (!g_pf_stop) {
        *g_pf_pte = g_pf_val;
        g_pf_writes = g_pf_writes + 1;
    }
    set_mask(me, true);
}

[[noreturn]] void secondary(unsigned me)
{
    set_mask(me, true);
    unsigned phase = 0;
    for (;;) {
        while (g_phase == phase) {
            g_blocks[me] = g_blocks[me] + 1;
            block();   // events enabled while blocked, masked again after
            set_mask(me, true);
        }
        phase = g_phase;
        if (phase == 1) {
            set_mask(me, false);
            stress(me);
            set_mask(me, true);
        }
        if (phase == 2 && me == 1) pf_spin(me);
    }
}

// Waits up to 2 s (TCG on a loaded machine is slow) for *count to pass
// `from`; the ms it took, or ~0.
uint64_t wait_past(volatile uint64_t* count, uint64_t from)
{
    const uint64_t t0 = now(0), until = t0 + 2000 * kMs;
    while (*count <= from && now(0) < until) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    return *count > from ? (now(0) - t0) / kMs : ~0ull;
}

void pf_only_test(const start_info_t* si)
{
    evtchn_bind_virq_t t{VIRQ_TIMER, 1, 0};
    check("page faults only: EVTCHNOP_bind_virq(VIRQ_TIMER, vCPU 1)", evtchn(EVTCHNOP_bind_virq, &t), 0);
    check("  a port below 256", t.port < kPorts, 1);
    if (t.port >= kPorts) return;
    __atomic_fetch_or(&g_mine[1][t.port / 64], xen_ulong_t(1) << (t.port % 64), __ATOMIC_SEQ_CST);
    const evtchn_port_t wake = bind_ipi(1), ev = bind_ipi(1);
    const uint64_t va = uint64_t(g_pf_page);
    const uint64_t e = l1_entry_of(si, va);
    g_pf_pte = reinterpret_cast<volatile uint64_t*>(uint64_t(gpfn_bytes(gpfn_of(si, e >> 12))) + (e & 4095));
    g_pf_val = *g_pf_pte;
    g_pf_stop = false;
    g_phase = 2;
    check("  EVTCHNOP_send: vCPU 1 woken to spin", send(wake), 0);
    check("  vCPU 1 spins on emulated page-table writes", wait_past(&g_pf_writes, 1000) != ~0ull, 1);
    // What vCPU 1 spins with: no hypercall, no interrupt of its own. A
    // periodic tick before its stop may still be on its way.
    wait_us(0, 20000);
    const uint64_t seen0 = g_seen[t.port];
    vcpu_set_periodic_timer_t pt{10 * kMs};
    check("  VCPUOP_set_periodic_timer(vCPU 1, 10 ms)",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_set_periodic_timer, 1, uint64_t(&pt)), 0);
    const uint64_t tick_ms = wait_past(&g_seen[t.port], seen0);
    check("  VIRQ_TIMER reaches vCPU 1 within 2 s", tick_ms != ~0ull, 1);
    write("events guest: page faults only: first tick after ");
    write_hex(tick_ms);
    write(" ms\n");
    check("VCPUOP_stop_periodic_timer(vCPU 1)", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 1, 0), 0);
    const uint64_t ev0 = g_seen[ev];
    check("EVTCHNOP_send to vCPU 1 spinning on page faults", send(ev), 0);
    check("  vCPU 1 saw it within 2 s", wait_past(&g_seen[ev], ev0) != ~0ull, 1);
    const uint64_t writes = g_pf_writes;
    check("  vCPU 1 still spinning", wait_past(&g_pf_writes, writes) != ~0ull, 1);
    const uint64_t blocks = g_blocks[1];
    g_pf_stop = true;
    wait_past(&g_blocks[1], blocks);   // back in its block
    check("  the entry as it was", *g_pf_pte == g_pf_val, 1);
}

// What is still in flight (sent, not seen), what was seen twice, and the total seen.
struct Tally {
    uint64_t lost = 0, extra = 0, total = 0;
};
Tally tally()
{
    Tally t;
    for (unsigned i = 0; i < g_nr; ++i)
        for (unsigned j = 0; j < g_nr; ++j)
            for (unsigned k = 0; k < kPortsPerPair && i != j; ++k) {
                const uint64_t got = g_seen[g_port[i][j][k]], want = g_sent[i][j][k];
                t.total += got;
                if (got < want) t.lost += want - got;
                if (got > want) t.extra += got - want;
            }
    return t;
}

void stress_test()
{
    for (unsigned i = 0; i < g_nr; ++i)
        for (unsigned j = 0; j < g_nr; ++j)
            for (unsigned k = 0; k < kPortsPerPair && i != j; ++k) g_port[i][j][k] = bind_ipi(j);
    set_mask(0, false);
    const uint64_t t0 = now(0);
    g_phase = 1;
    for (unsigned i = 1; i < g_nr; ++i) {   // wakes them
        g_sent[0][i][0] = 1;
        send(g_port[0][i][0]);
    }
    stress(0);
    while (g_done < g_nr && !g_stuck) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    // The last events in flight arrive.
    const uint64_t until = now(0) + 2000 * kMs;
    while (tally().lost && now(0) < until) hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    const uint64_t t1 = now(0);
    set_mask(0, true);
    const Tally t = tally();
    write("events guest: stress: ");
    write_hex(t.total);
    write(" events across ");
    write_hex(g_nr);
    write(" vCPUs in ");
    write_hex((t1 - t0) / kMs);
    write(" ms\n");
    check("stress: no port stuck (an event lost)", g_stuck, 0);
    check("  none lost", long(t.lost), 0);
    check("  none duplicated", long(t.extra) + g_duplicate, 0);
    check("  all sent and received", t.total >= g_events / g_nr * g_nr, 1);
}

// The number after the word "events=" on the command line, or `otherwise`.
unsigned events_word(const start_info_t* si, unsigned otherwise)
{
    const char* s = reinterpret_cast<const char*>(si->cmd_line);
    constexpr char kWord[] = "events=";
    for (size_t i = 0; s[i]; ++i) {
        if (i && s[i - 1] != ' ') continue;
        size_t k = 0;
        while (kWord[k] && s[i + k] == kWord[k]) ++k;
        if (kWord[k]) continue;
        unsigned n = 0;
        for (i += k; s[i] >= '0' && s[i] <= '9'; ++i) n = n * 10 + unsigned(s[i] - '0');
        return n ? n : otherwise;
    }
    return otherwise;
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    g_events = events_word(si, g_events);
    g_sh = map_shared_info(si, initial_sp);
    check("shared_info mapped", g_sh != nullptr, 1);
    if (!g_sh) finish("events guest");
    g_nr = 1;
    while (g_nr < kMaxVcpus && hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, g_nr, 0) >= 0) ++g_nr;
    set_mask(0, true);
    callback_register_t cb{CALLBACKTYPE_event, 0, uint64_t(events_callbacks)};
    check("CALLBACKOP_register event", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    timer_test();
    if (g_nr < 2) {
        write("events guest: 1 vCPU: no wake or stress test\n");
        finish("events guest");
    }
    start_vcpus(si);
    wake_test();
    pf_only_test(si);
    stress_test();
    finish("events guest");
}
