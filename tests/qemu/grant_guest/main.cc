// Two domains that share a ring through a grant and signal each other by an
// interdomain event channel (docs/architecture.md §11, docs/abi.md §12.7;
// qemu_grant_pair). One kernel, two roles, each from its own xl.cfg:
// - granter (role=granter): grants one of its pages (the ring, gref `ref=`)
//   and a second one (the copy page, gref ref + 1) to domain `other=`,
//   writable, and allocates an unbound port for it, which must be `port=`;
// - mapper (role=mapper): maps the ring (GNTTABOP_map_grant_ref,
//   GNTMAP_host_map at a virtual address) and binds to port `port=` of
//   domain `other=`.
// How each learns the other's domain id, grant reference and port: the
// words of its xl.cfg's `extra` (tests/qemu/tests.cmake writes both files),
// checked where they can be (the port alloc_unbound gave must be the one
// the configs name). Until the other side is ready the map and the bind are
// retried (GNTST_bad_gntref or GNTST_general_error, -EINVAL), for at most 5 s.
//
// The exchange: the granter sends `msgs=` requests 1, 2, ... through the
// ring's request half; the mapper checks each is the next one (a lost or
// duplicated message breaks the sequence) and answers 3n + 1 in the response
// half, which the granter checks the same way. Each side sends an event
// after it moved the ring on and, when it cannot move, blocks in
// SCHEDOP_block with its upcall masked until then (the block unmasks it
// atomically, so an event sent meanwhile is never missed); both have their
// periodic timer stopped, so only the other domain's event (the kick of
// EventOut::remote_kicks) ends a block: a lost wake-up hangs the pair
// until the run's timeout, a failure. The
// ring is served by the domain's last vCPU (the port is bound to it),
// vCPU 0 blocks until it is done (an IPI event). The mapper unmaps only once
// the granter has checked its entry's flags (the ring's `release`).
// Before the exchange the mapper tries the abuse cases a guest can try of
// docs/security.md §7.18 against grefs ref + 2 (read-only) and ref + 3 (the
// granter's L4), fills its maptrack with read-only maps of ref + 2, + 6
// and + 7, maps ref + 5 once, and runs the whole-machine invariant check.
// After the exchange the granter tries to unmap the mapper's handle of the
// ring and revokes ref + 5, which the mapper then cannot map (abuse.cc).
// Then GNTTABOP_copy: the mapper copies the granter's pattern out of the
// copy page into its own frame (source gref, destination gmfn) and its own
// pattern into the copy page (source gmfn, destination gref); a copy past
// the page's end is refused (GNTST_bad_copy_arg). The granter checks, while
// mapped, that the ring's entry has GTF_reading and GTF_writing, then that
// both go once the mapper unmapped, and revokes all four entries. With the
// word keep-mapped the mapper powers off with the ring still mapped: its
// teardown must release the pin (the flags go) and give everything back.
// With the words exit-mapped (granter) and outlive-granter (mapper) it is
// the granter that powers off first, the ring mapped (abuse.cc).
#include "grant_guest/grant_guest.h"

#include <xen/callback.h>
#include <xen/event_channel.h>
#include <xen/vcpu.h>

using namespace tiny;
using namespace grant_guest;

namespace grant_guest {
const start_info_t* g_si;
volatile shared_info_t* g_sh;
unsigned g_other, g_ref;
alignas(4096) uint8_t g_copy_page[4096];
} // namespace grant_guest

#define HIDDEN __attribute__((visibility("hidden")))

namespace {

constexpr unsigned kMaxVcpus = 4;
constexpr uint32_t kSlots = 64;
constexpr uint64_t kMs = 1000000;
constexpr unsigned kCopyIn = 2048, kCopyOut = 1500, kCopyOutAt = 2500, kCopyInAt = 100;

// The shared page: two single-producer, single-consumer rings of 64-bit
// messages, and the mapper's word that its copies are done.
struct Ring {
    uint32_t req_prod, req_cons, rsp_prod, rsp_cons;
    uint32_t copied;    // the mapper's copies are done
    uint32_t release;   // the granter has checked its entry (and revoked ref + 5): the mapper may unmap
    uint64_t addr;      // where the mapper mapped the ring, and its handle there,
    uint32_t handle;    // for the granter's unmap of another domain's handle
    uint64_t req[kSlots];
    uint64_t rsp[kSlots];
};
static_assert(sizeof(Ring) <= 4096);

alignas(4096) uint8_t g_ring_page[4096];   // the granter's ring
alignas(4096) uint8_t g_ro_page[4096];     // the granter's page granted read-only (gref ref + 2)
alignas(16) uint8_t g_stack[kMaxVcpus][16384];

bool g_granter;
unsigned g_port_word, g_vcpus, g_worker;
uint64_t g_msgs;
evtchn_port_t g_port, g_ipi;          // the interdomain port, vCPU 0's IPI port
volatile Ring* g_ring;
volatile bool g_done;
bool g_broken;                        // a message out of sequence: the exchange stops
volatile uint64_t g_blocks[kMaxVcpus];
grant_handle_t g_handle;
volatile uint64_t g_mine[kMaxVcpus];  // ports (below 64) each vCPU's upcall takes

} // namespace

// The event callback, one entry per vCPU (tiny_events.h).
TINY_EVENT_CALLBACKS(grant_callbacks, grant_upcall);

// Clears this vCPU's pending ports: the work is done where it blocked,
// which looks at the ring again.
extern "C" void grant_upcall(unsigned vcpu)
{
    volatile vcpu_info_t* vi = &g_sh->vcpu_info[vcpu];
    while (__atomic_exchange_n(&vi->evtchn_upcall_pending, uint8_t(0), __ATOMIC_SEQ_CST)) {
        __atomic_exchange_n(&vi->evtchn_pending_sel, xen_ulong_t(0), __ATOMIC_SEQ_CST);
        __atomic_fetch_and(&g_sh->evtchn_pending[0], ~xen_ulong_t(g_mine[vcpu]), __ATOMIC_SEQ_CST);
    }
}

namespace {

long evtchn(unsigned cmd, void* arg) { return hypercall(__HYPERVISOR_event_channel_op, cmd, uint64_t(arg)); }
long send(evtchn_port_t p)
{
    evtchn_send_t s{p};
    return evtchn(EVTCHNOP_send, &s);
}
void set_mask(unsigned vcpu, bool masked) { g_sh->vcpu_info[vcpu].evtchn_upcall_mask = masked; }
void yield() { hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0); }
// Events on while blocked (SCHEDOP_block unmasks them atomically with its
// check), masked again after.
void block(unsigned vcpu)
{
    g_blocks[vcpu] = g_blocks[vcpu] + 1;
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_block, 0);
    set_mask(vcpu, true);
}

// The number after the word `key` (e.g. "msgs=") on the command line, or `otherwise`.
uint64_t word_uint(const char* key, uint64_t otherwise)
{
    const char* s = reinterpret_cast<const char*>(g_si->cmd_line);
    for (size_t i = 0; s[i]; ++i) {
        if (i && s[i - 1] != ' ') continue;
        size_t k = 0;
        while (key[k] && s[i + k] == key[k]) ++k;
        if (key[k] || s[i + k] < '0' || s[i + k] > '9') continue;
        uint64_t n = 0;
        for (i += k; s[i] >= '0' && s[i] <= '9'; ++i) n = n * 10 + uint64_t(s[i] - '0');
        return n;
    }
    return otherwise;
}


void say(const char* what, uint64_t n)
{
    write(g_granter ? "grant guest: granter: " : "grant guest: mapper: ");
    write(what);
    write_hex(n);
    write("\n");
}

// pvmmu's count of v's halts (PVMMUOP_vcpu_counters), ~0 elsewhere.
uint64_t halts(unsigned v)
{
    static pvmmu_vcpu_counters c;
    return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, v, uint64_t(&c)) == 0 ? c.halts : ~0ull;
}

// The granter's table, mapped; its entries ref and ref + 1 given to `other`.
volatile grant_entry_v1_t* g_table;

void grant(grant_ref_t ref, uint64_t mfn, uint16_t extra = 0)
{
    volatile grant_entry_v1_t& e = g_table[ref];
    e.frame = uint32_t(mfn);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    // Flags and domid as one word (<xen/grant_table.h>: flags last).
    __atomic_store_n(reinterpret_cast<volatile uint32_t*>(&e), uint32_t(GTF_permit_access | extra) | g_other << 16,
                     __ATOMIC_SEQ_CST);
}

uint16_t flags_of(grant_ref_t ref) { return __atomic_load_n(&g_table[ref].flags, __ATOMIC_SEQ_CST); }

// The granter's revocation as Linux's gnttab_end_foreign_access_ref: refused
// while the other domain still reads or writes through the entry.
bool revoke(grant_ref_t ref)
{
    uint16_t f = flags_of(ref);
    if (f & (GTF_reading | GTF_writing)) return false;
    return __atomic_compare_exchange_n(&g_table[ref].flags, &f, uint16_t(0), false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

void granter_setup()
{
    check("GNTTABOP_query_size", [] {
        gnttab_query_size_t q{DOMID_SELF, 0, 0, 0};
        return gnttab(GNTTABOP_query_size, &q) == 0 && q.status == GNTST_okay && q.max_nr_frames >= 1;
    }(), 1);
    xen_pfn_t frame = 0;
    gnttab_setup_table_t st{DOMID_SELF, 1, 0, {}};
    set_xen_guest_handle(st.frame_list, &frame);
    check("GNTTABOP_setup_table, 1 frame", gnttab(GNTTABOP_setup_table, &st) == 0 && st.status == GNTST_okay, 1);
    const uint64_t va = scratch_va(0);
    check("the table frame mapped writable",
          hypercall(__HYPERVISOR_update_va_mapping, va, frame << 12 | 0x67, UVMF_INVLPG | UVMF_LOCAL), 0);
    g_table = reinterpret_cast<volatile grant_entry_v1_t*>(va);
    for (unsigned i = 0; i < kCopyIn; ++i) g_copy_page[i] = uint8_t(i * 7 + 1);
    // The abuse cases' grants first, so they are there once the ring is.
    g_ro_page[0] = 0x5a;
    grant(g_ref + 2, mfn_of(g_ro_page), GTF_readonly);
    grant(g_ref + 3, p2m(g_si)[(g_si->pt_base - XENPV_VIRT_BASE) >> 12]);   // its L4, a page table
    for (unsigned k = 5; k <= 7; ++k) grant(g_ref + k, mfn_of(g_ro_page), GTF_readonly);
    grant(g_ref + 1, mfn_of(g_copy_page));
    grant(g_ref, mfn_of(g_ring_page));
    g_ring = reinterpret_cast<volatile Ring*>(g_ring_page);
    // The port the configs name: the lowest free one, as alloc_unbound gives it.
    evtchn_alloc_unbound_t a{DOMID_SELF, domid_t(g_other), 0};
    check("EVTCHNOP_alloc_unbound for the other domain", evtchn(EVTCHNOP_alloc_unbound, &a), 0);
    g_port = a.port;
    if (g_port != g_port_word) say("FAILED: alloc_unbound gave a port other than port=: ", g_port);
    check("  the port the configs name", g_port == g_port_word, 1);
}

void mapper_setup()
{
    const uint64_t until = now() + 5000 * kMs;
    gnttab_map_grant_ref_t m{};
    m.host_addr = scratch_va(0);
    m.flags = GNTMAP_host_map;
    m.ref = g_ref;
    m.dom = domid_t(g_other);
    do {
        m.status = GNTST_general_error;
        if (gnttab(GNTTABOP_map_grant_ref, &m) != 0) break;
        if (m.status != GNTST_okay) yield();
    } while (m.status != GNTST_okay && now() < until);
    if (m.status != GNTST_okay) say("FAILED: map_grant_ref: status ", uint64_t(int64_t(m.status)));
    check("GNTTABOP_map_grant_ref GNTMAP_host_map of the ring", m.status, GNTST_okay);
    if (m.status != GNTST_okay) return;
    g_ring = reinterpret_cast<volatile Ring*>(m.host_addr);
    g_handle = m.handle;
    g_ring->addr = m.host_addr;
    g_ring->handle = m.handle;
    long rc;
    evtchn_bind_interdomain_t b{domid_t(g_other), g_port_word, 0};
    while ((rc = evtchn(EVTCHNOP_bind_interdomain, &b)) == -XEN_EINVAL && now() < until) yield();
    check("EVTCHNOP_bind_interdomain to the other's port", rc, 0);
    if (rc) return;
    g_port = b.local_port;
    mapper_abuse();
}

// One side's share of the exchange; true while it moved the ring on.
bool granter_step(uint64_t& sent, uint64_t& answered)
{
    volatile Ring& r = *g_ring;
    bool moved = false;
    uint32_t prod = r.req_prod;
    while (sent < g_msgs && prod - __atomic_load_n(&r.req_cons, __ATOMIC_ACQUIRE) < kSlots) {
        r.req[prod % kSlots] = ++sent;
        __atomic_store_n(&r.req_prod, ++prod, __ATOMIC_RELEASE);
        moved = true;
    }
    uint32_t cons = r.rsp_cons;
    while (cons != __atomic_load_n(&r.rsp_prod, __ATOMIC_ACQUIRE)) {
        const uint64_t got = r.rsp[cons % kSlots];
        if (got != 3 * (answered + 1) + 1) {
            say("FAILED: response out of sequence after ", answered);
            ++g_failed;
            g_broken = true;
        }
        ++answered;
        __atomic_store_n(&r.rsp_cons, ++cons, __ATOMIC_RELEASE);
        moved = true;
    }
    return moved;
}

bool mapper_step(uint64_t& got)
{
    volatile Ring& r = *g_ring;
    bool moved = false;
    uint32_t cons = r.req_cons, prod = r.rsp_prod;
    while (cons != __atomic_load_n(&r.req_prod, __ATOMIC_ACQUIRE) &&
           prod - __atomic_load_n(&r.rsp_cons, __ATOMIC_ACQUIRE) < kSlots) {
        const uint64_t n = r.req[cons % kSlots];
        if (n != got + 1) {
            say("FAILED: request out of sequence (lost or duplicated) after ", got);
            ++g_failed;
            g_broken = true;
        }
        ++got;
        __atomic_store_n(&r.req_cons, ++cons, __ATOMIC_RELEASE);
        r.rsp[prod % kSlots] = 3 * n + 1;
        __atomic_store_n(&r.rsp_prod, ++prod, __ATOMIC_RELEASE);
        moved = true;
    }
    return moved;
}

// Blocks on the interdomain port until `ready` holds, events masked between.
template <class F>
void wait_for(unsigned vcpu, F ready)
{
    while (!ready()) block(vcpu);
}

void exchange(unsigned vcpu)
{
    uint64_t sent = 0, answered = 0, got = 0;
    const uint64_t t0 = now(), blocks0 = g_blocks[vcpu], halts0 = halts(vcpu);
    for (;;) {
        const bool moved = g_granter ? granter_step(sent, answered) : mapper_step(got);
        if (moved) {
            send(g_port);
            continue;
        }
        if (g_broken || (g_granter ? answered == g_msgs : got == g_msgs)) break;
        block(vcpu);
    }
    const uint64_t n = g_granter ? answered : got;
    say(g_granter ? "responses received in order: " : "requests received in order: ", n);
    say("  in ms: ", (now() - t0) / kMs);
    say("  SCHEDOP_block calls: ", g_blocks[vcpu] - blocks0);
    if (halts0 != ~0ull) say("  halts of the serving vCPU's CPU meanwhile (pvmmu): ", halts(vcpu) - halts0);
    check("every message once, in order", n, long(g_msgs));
}

void copies(unsigned vcpu)
{
    if (!g_granter) {
        // In: the granter's pattern to this domain's own frame.
        gnttab_copy_t c{};
        c.source.u.ref = g_ref + 1;
        c.source.domid = domid_t(g_other);
        c.dest.u.gmfn = mfn_of(g_copy_page);
        c.dest.domid = DOMID_SELF;
        c.dest.offset = kCopyInAt;
        c.len = kCopyIn;
        c.flags = GNTCOPY_source_gref;
        check("GNTTABOP_copy from the granter's gref", gnttab(GNTTABOP_copy, &c) == 0 && c.status == GNTST_okay, 1);
        bool same = true;
        for (unsigned i = 0; i < kCopyIn; ++i) same = same && g_copy_page[kCopyInAt + i] == uint8_t(i * 7 + 1);
        check("  the bytes arrived", same, 1);
        // Out: this domain's pattern into the granter's page.
        for (unsigned i = 0; i < kCopyOut; ++i) g_copy_page[i] = uint8_t(i * 13 + 5);
        c = gnttab_copy_t{};
        c.source.u.gmfn = mfn_of(g_copy_page);
        c.source.domid = DOMID_SELF;
        c.dest.u.ref = g_ref + 1;
        c.dest.domid = domid_t(g_other);
        c.dest.offset = kCopyOutAt;
        c.len = kCopyOut;
        c.flags = GNTCOPY_dest_gref;
        check("GNTTABOP_copy to the granter's gref", gnttab(GNTTABOP_copy, &c) == 0 && c.status == GNTST_okay, 1);
        c.dest.offset = 4000;
        c.len = 200;
        check("GNTTABOP_copy past the page's end refused",
              gnttab(GNTTABOP_copy, &c) == 0 && c.status == GNTST_bad_copy_arg, 1);
        __atomic_store_n(&g_ring->copied, 1u, __ATOMIC_RELEASE);
        send(g_port);
        return;
    }
    wait_for(vcpu, [] { return __atomic_load_n(&g_ring->copied, __ATOMIC_ACQUIRE) != 0; });
    bool same = true;
    for (unsigned i = 0; i < kCopyOut; ++i) same = same && g_copy_page[kCopyOutAt + i] == uint8_t(i * 13 + 5);
    check("the mapper's copy arrived in the copy page", same, 1);
    check("  the bytes around it untouched", g_copy_page[kCopyOutAt - 1] == 0 && g_copy_page[kCopyOutAt + kCopyOut] == 0, 1);
}

// The granter's wait for the mapper to let go of the ring: by an unmap
// (which the mapper follows with an event) or, with the mapper's word
// keep-mapped, by its domain's teardown (which sends none). So it polls its
// port with a 10 ms timeout (SCHEDOP_poll, a halt until then), the port's
// pending bit cleared before each look, for at most 10 s.
void wait_unmapped()
{
    const uint64_t until = now() + 10000 * kMs;
    for (;;) {
        __atomic_fetch_and(&g_sh->evtchn_pending[0], ~(xen_ulong_t(1) << g_port), __ATOMIC_SEQ_CST);
        if (!(flags_of(g_ref) & (GTF_reading | GTF_writing))) return;
        if (now() > until) {
            say("FAILED: the ring's entry still in use 10 s after its release: flags ", flags_of(g_ref));
            ++g_failed;
            return;
        }
        evtchn_port_t ports[1] = {g_port};
        sched_poll_t p{};
        set_xen_guest_handle(p.ports, ports);
        p.nr_ports = 1;
        p.timeout = now() + 10 * kMs;
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&p));
    }
}

void finish_grants(unsigned vcpu)
{
    if (!g_granter) {
        wait_for(vcpu, [] { return __atomic_load_n(&g_ring->release, __ATOMIC_ACQUIRE) != 0; });
        mapper_after_revoke();
        if (has_word(g_si, "keep-mapped")) {
            write("grant guest: mapper: powering off with the ring mapped (keep-mapped)\n");
            return;
        }
        if (has_word(g_si, "outlive-granter")) {
            mapper_outlives_granter(g_port, g_handle);
            return;
        }
        gnttab_unmap_grant_ref_t u{scratch_va(0), 0, g_handle, 0};
        check("GNTTABOP_unmap_grant_ref of the ring", gnttab(GNTTABOP_unmap_grant_ref, &u) == 0 && u.status == GNTST_okay, 1);
        send(g_port);
        return;
    }
    // Abuse from the granter's side (abuse.cc): the mapper's handle is none
    // of this domain's, and its revoked entry is refused to the mapper.
    granter_abuse(g_ring->addr, grant_handle_t(g_ring->handle));
    check("ref + 5 revoked (no mapping of it left)", revoke(g_ref + 5), 1);
    check("the ring's entry has GTF_reading and GTF_writing while mapped",
          (flags_of(g_ref) & (GTF_reading | GTF_writing)) == (GTF_reading | GTF_writing), 1);
    check("  and cannot be revoked", revoke(g_ref), 0);
    __atomic_store_n(&g_ring->release, 1u, __ATOMIC_RELEASE);
    send(g_port);
    if (has_word(g_si, "exit-mapped")) {
        write("grant guest: granter: powering off with the ring mapped (exit-mapped)\n");
        return;
    }
    wait_unmapped();
    check("the ring's entry revoked once unmapped", revoke(g_ref), 1);
    check("the copy page's entry revoked (no copy in flight)", revoke(g_ref + 1), 1);
    check("the read-only and the page-table grants revoked (the refused maps left no pin)",
          revoke(g_ref + 2) && revoke(g_ref + 3), 1);
    check("the maptrack-filling grants revoked (every handle given back)", revoke(g_ref + 6) && revoke(g_ref + 7), 1);
}

void worker(unsigned vcpu)
{
    check("VCPUOP_stop_periodic_timer", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, vcpu, 0), 0);
    set_mask(vcpu, true);
    g_mine[vcpu] = g_mine[vcpu] | 1ull << g_port;
    if (vcpu) {
        evtchn_bind_vcpu_t bv{g_port, vcpu};
        check("EVTCHNOP_bind_vcpu of the port to the serving vCPU", evtchn(EVTCHNOP_bind_vcpu, &bv), 0);
        // An event sent before the bind left the port pending on vCPU 0,
        // where no upcall takes it, and a pending port raises no new
        // upcall: cleared here, before the ring is first looked at.
        __atomic_fetch_and(&g_sh->evtchn_pending[0], ~(xen_ulong_t(1) << g_port), __ATOMIC_SEQ_CST);
    }
    exchange(vcpu);
    copies(vcpu);
    finish_grants(vcpu);
}

[[noreturn]] void secondary(unsigned vcpu)
{
    worker(vcpu);
    g_done = true;
    send(g_ipi);
    for (;;) block(vcpu);
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    g_si = si;
    g_granter = has_word(si, "role=granter");
    g_other = unsigned(word_uint("other=", 0));
    g_ref = unsigned(word_uint("ref=", 8));
    g_port_word = unsigned(word_uint("port=", 2));
    g_msgs = word_uint("msgs=", 4000);
    g_sh = map_shared_info(si, initial_sp);
    if (!g_sh || (!g_granter && !has_word(si, "role=mapper")) || !g_other || g_port_word >= 63) {
        write("grant guest: FAILED: no shared_info, or words missing (role=granter|mapper other=N ref=R port=P)\n");
        ++g_failed;
        finish("grant guest");
    }
    g_vcpus = 1;
    while (g_vcpus < kMaxVcpus && hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, g_vcpus, 0) >= 0) ++g_vcpus;
    g_worker = g_vcpus - 1;
    set_mask(0, true);
    callback_register_t cb{CALLBACKTYPE_event, 0, uint64_t(grant_callbacks)};
    check("CALLBACKOP_register event", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    if (g_granter) granter_setup();
    else mapper_setup();
    // Without the ring or the port there is nothing to run; any other
    // failure is reported at the end, after the exchange, so that the other
    // domain, which blocks until this one's events, is not left waiting.
    if (!g_ring || !g_port) finish("grant guest");
    say("messages: ", g_msgs);
    say("the ring served by vCPU ", g_worker);
    if (g_worker == 0) {
        worker(0);
        finish("grant guest");
    }
    evtchn_bind_ipi_t ipi{0, 0};
    check("EVTCHNOP_bind_ipi to vCPU 0", evtchn(EVTCHNOP_bind_ipi, &ipi), 0);
    g_ipi = ipi.port;
    g_mine[0] = 1ull << g_ipi;
    check("VCPUOP_stop_periodic_timer, vCPU 0", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 0, 0), 0);
    static vcpu_guest_context_t ctx;
    ctx.flags = VGCF_in_kernel;
    ctx.user_regs.rip = uint64_t(&secondary);
    ctx.user_regs.rdi = g_worker;
    ctx.user_regs.rsp = uint64_t(g_stack[g_worker] + sizeof(g_stack[g_worker]) - 8);
    ctx.user_regs.cs = FLAT_KERNEL_CS64;
    ctx.user_regs.ss = FLAT_KERNEL_SS;
    ctx.kernel_ss = FLAT_KERNEL_SS;
    ctx.kernel_sp = ctx.user_regs.rsp;
    ctx.event_callback_eip = uint64_t(grant_callbacks + 16 * g_worker);
    ctx.ctrlreg[3] = xen_pfn_to_cr3(p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12]);
    check("VCPUOP_initialise", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, g_worker, uint64_t(&ctx)), 0);
    check("VCPUOP_up", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, g_worker, 0), 0);
    while (!g_done) block(0);
    say("SCHEDOP_block calls of vCPU 0 while it waited: ", g_blocks[0]);
    finish("grant guest");
}
