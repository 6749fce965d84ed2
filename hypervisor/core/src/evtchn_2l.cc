// The 2-level event ABI on the guest-visible bits (<xen/xen.h> shared_info
// and vcpu_info): raising, unmasking and clearing a port, and the upcall and
// wake-up of the vCPU it notifies. Every bit a guest also writes is changed
// by one atomic read-modify-write, never a plain store, so a guest running
// on another CPU and clearing bits meanwhile loses nothing. Once the domain
// switched to the FIFO ABI, raise, unmask and the pending bit's functions
// hand over to evtchn_fifo.cc.
#include "core/events.h"
#include "evtchn_fifo.h"

namespace pvmmu {

namespace {

xen_ulong_t bit_of(unsigned n) { return xen_ulong_t(1) << (n % kPortsPerWord); }

bool test_and_set(xen_ulong_t* words, unsigned n)
{
    return __atomic_fetch_or(&words[n / kPortsPerWord], bit_of(n), __ATOMIC_SEQ_CST) & bit_of(n);
}
bool test_and_clear(xen_ulong_t* words, unsigned n)
{
    return __atomic_fetch_and(&words[n / kPortsPerWord], ~bit_of(n), __ATOMIC_SEQ_CST) & bit_of(n);
}
bool test(const xen_ulong_t* words, unsigned n)
{
    return __atomic_load_n(&words[n / kPortsPerWord], __ATOMIC_SEQ_CST) & bit_of(n);
}

// The vCPU's selector bit for the word that holds `port`; then its upcall.
void select_word(DomainEvents& e, unsigned id, unsigned port, Kicks& k)
{
    vcpu_info_t* vi = event_vcpu_info(e, id);
    const unsigned word = port / kPortsPerWord;
    if (!(__atomic_fetch_or(&vi->evtchn_pending_sel, bit_of(word), __ATOMIC_SEQ_CST) & bit_of(word)))
        evtchn_mark_upcall(e, id, k);
}

} // namespace

void evtchn_wake_pollers(DomainEvents& e, unsigned port, Kicks& k)
{
    uint64_t polling = e.poll_mask.load(std::memory_order_seq_cst);
    while (polling) {
        const unsigned id = unsigned(__builtin_ctzll(polling));
        polling &= polling - 1;
        const int32_t want = e.vcpu[id].poll_port.load(std::memory_order_relaxed);
        if (want <= 0 || unsigned(want) == port) evtchn_unblock(e, id, k);
    }
}

DomainEvents::DomainEvents(shared_info_t* shared, uint64_t default_period_ns) : shared_(shared)
{
    ports[0].state = PortState::Reserved;   // port 0 is never bound (Xen: ECS_RESERVED)
    for (VcpuEvents& v : vcpu) {
        v.spare.evtchn_upcall_mask = 1;
        v.period.store(default_period_ns, std::memory_order_relaxed);
        // Xen's first tick comes a period after system time 0 (its last
        // event), so a vCPU that starts later ticks at once.
        v.periodic_next.store(default_period_ns ? default_period_ns : kNever, std::memory_order_relaxed);
    }
}

vcpu_info_t* event_vcpu_info(DomainEvents& e, unsigned id)
{
    if (vcpu_info_t* vi = e.vcpu[id].info.load(std::memory_order_acquire)) return vi;
    if (id < XEN_LEGACY_MAX_VCPUS) return &e.shared()->vcpu_info[id];
    return &e.vcpu[id].spare;
}

void set_event_vcpu_info(DomainEvents& e, unsigned id, vcpu_info_t* info)
{
    e.vcpu[id].info.store(info, std::memory_order_release);
}

void evtchn_unblock(DomainEvents& e, unsigned id, Kicks& k)
{
    e.poll_mask.fetch_and(~(uint64_t(1) << id), std::memory_order_seq_cst);
    e.vcpu[id].poll_port.store(0, std::memory_order_relaxed);
    e.vcpu[id].poll_deadline.store(kNever, std::memory_order_relaxed);
    if (e.vcpu[id].blocked.exchange(false, std::memory_order_seq_cst)) k.add(id);
}

// Every 0 → 1 of evtchn_upcall_pending goes through here and kicks the vCPU:
// the bare-metal platform checks for an upcall only on returns something
// marked (hypervisor/arch/x86_64/pv/events.h), a kick among them, and an
// iret that unmasks looks only when it finds one pending. A raise that set
// the byte without the kick could wait for the vCPU's next marked entry.
void evtchn_mark_upcall(DomainEvents& e, unsigned id, Kicks& k)
{
    vcpu_info_t* vi = event_vcpu_info(e, id);
    if (__atomic_exchange_n(&vi->evtchn_upcall_pending, uint8_t(1), __ATOMIC_SEQ_CST)) return;
    k.add(id);
    evtchn_unblock(e, id, k);
}

void evtchn_raise(DomainEvents& e, unsigned port, Kicks& k)
{
    if (evtchn_fifo_on(e)) return fifo_raise(e, port, k);
    shared_info_t* s = e.shared();
    if (test_and_set(s->evtchn_pending, port)) return;   // already pending: one event
    if (!test(s->evtchn_mask, port)) select_word(e, e.ports[port].vcpu, port, k);
    evtchn_wake_pollers(e, port, k);
}

void evtchn_unmask_port(DomainEvents& e, unsigned port, Kicks& k)
{
    if (evtchn_fifo_on(e)) return fifo_unmask(e, port, k);
    shared_info_t* s = e.shared();
    if (test_and_clear(s->evtchn_mask, port) && test(s->evtchn_pending, port))
        select_word(e, e.ports[port].vcpu, port, k);
}

// Under FIFO the 2-level bit goes too: one left from before the switch would
// read as pending once EVTCHNOP_reset goes back to 2-level.
void evtchn_clear_pending(DomainEvents& e, unsigned port)
{
    if (evtchn_fifo_on(e)) fifo_clear_pending(e, port);
    (void)test_and_clear(e.shared()->evtchn_pending, port);
}

bool evtchn_is_pending(const DomainEvents& e, unsigned port)
{
    if (evtchn_fifo_on(e)) return fifo_is_pending(e, port);
    return test(e.shared()->evtchn_pending, port);
}

} // namespace pvmmu
