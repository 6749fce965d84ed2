// A vCPU's timers (<xen/vcpu.h> VCPUOP_*_timer, HYPERVISOR_set_timer_op):
// the single-shot deadline and the periodic tick, both raising VIRQ_TIMER on
// the vCPU's bound port when timer_expire finds them due. The deadlines are
// system time in ns; the platform reads the earliest (next_deadline) and
// arms its own timer for it, and passes `now` in.
#include "core/event_ops.h"

namespace pvmmu {

namespace {

constexpr uint64_t kMs = 1'000'000;
// Xen's STIME_DELTA_MAX: the longest period NOW() + period cannot overflow.
constexpr uint64_t kStimeDeltaMax = ~uint64_t(0) >> 2;

VcpuEvents& timers(Vcpu& v) { return v.domain->events->vcpu[v.id]; }

void set_period(VcpuEvents& t, uint64_t period, uint64_t now)
{
    if (t.period.load(std::memory_order_relaxed) == period) return;   // as Xen: the tick keeps its phase
    t.period.store(period, std::memory_order_relaxed);
    t.periodic_next.store(period ? now + period : kNever, std::memory_order_relaxed);
}

} // namespace

long set_timer_op(Hypervisor&, Vcpu& v, uint64_t timeout, uint64_t now)
{
    if (!v.domain->events) return -XEN_ENOSYS;
    VcpuEvents& t = timers(v);
    const int64_t offset = int64_t(timeout - now);
    if (timeout == 0)
        t.singleshot.store(kNever, std::memory_order_relaxed);
    else if (int64_t(timeout) < 0 || (offset > 0 && (uint64_t(offset) >> 50) != 0))
        t.singleshot.store(now + 100 * kMs, std::memory_order_relaxed);
    else
        t.singleshot.store(timeout, std::memory_order_relaxed);
    return 0;
}

long vcpu_timer_op(Hypervisor& hv, Vcpu& caller, Vcpu& target, unsigned cmd, Vaddr arg, uint64_t now)
{
    if (!caller.domain->events) return -XEN_ENOSYS;
    VcpuEvents& t = timers(target);
    Platform& plat = hv.platform();
    switch (cmd) {
    case VCPUOP_set_singleshot_timer: {
        if (&target != &caller) return -XEN_EINVAL;
        vcpu_set_singleshot_timer_t s;
        if (plat.copy_from_guest(caller, &s, arg, sizeof(s))) return -XEN_EFAULT;
        // VCPU_SSHOTTMR_future is ignored, as <xen/vcpu.h> allows and Debian's
        // Xen 4.17 does (xen_conform_guest): a past deadline is taken and
        // fires at once, never -ETIME. Xen takes the deadline as a signed
        // system time: one with bit 63 set is in the past too (and ~0 must not
        // read as kNever).
        t.singleshot.store(s.timeout_abs_ns >> 63 ? now : s.timeout_abs_ns, std::memory_order_relaxed);
        return 0;
    }
    case VCPUOP_stop_singleshot_timer:
        if (&target != &caller) return -XEN_EINVAL;
        t.singleshot.store(kNever, std::memory_order_relaxed);
        return 0;
    case VCPUOP_set_periodic_timer: {
        vcpu_set_periodic_timer_t s;
        if (plat.copy_from_guest(caller, &s, arg, sizeof(s))) return -XEN_EFAULT;
        if (s.period_ns < kMs || s.period_ns > kStimeDeltaMax) return -XEN_EINVAL;
        set_period(t, s.period_ns, now);
        return 0;
    }
    case VCPUOP_stop_periodic_timer:
        set_period(t, 0, now);
        return 0;
    default:
        return -XEN_ENOSYS;
    }
}

uint64_t next_deadline(const Vcpu& v)
{
    if (!v.domain->events) return kNever;
    const VcpuEvents& t = v.domain->events->vcpu[v.id];
    uint64_t d = t.singleshot.load(std::memory_order_relaxed);
    if (t.period.load(std::memory_order_relaxed)) {
        const uint64_t p = t.periodic_next.load(std::memory_order_relaxed);
        if (p < d) d = p;
    }
    const uint64_t poll = t.poll_deadline.load(std::memory_order_relaxed);
    return poll < d ? poll : d;
}

Kicks timer_expire(Hypervisor& hv, Vcpu& v, uint64_t now)
{
    Kicks k;
    DomainEvents* e = v.domain->events;
    if (!e) return k;
    VcpuEvents& t = e->vcpu[v.id];
    bool tick = false;
    uint64_t ss = t.singleshot.load(std::memory_order_relaxed);
    // A deadline the vCPU set again meanwhile is its new one, not this expiry's.
    if (ss <= now && t.singleshot.compare_exchange_strong(ss, kNever, std::memory_order_relaxed)) tick = true;
    const uint64_t period = t.period.load(std::memory_order_relaxed);
    uint64_t next = t.periodic_next.load(std::memory_order_relaxed);
    if (period && next <= now && t.periodic_next.compare_exchange_strong(next, now + period, std::memory_order_relaxed))
        tick = true;
    uint64_t poll = t.poll_deadline.load(std::memory_order_relaxed);
    const bool poll_due = poll <= now && t.poll_deadline.compare_exchange_strong(poll, kNever, std::memory_order_relaxed);
    if (!tick && !poll_due) return k;
    LockGuard g(e->lock, hv.platform());
    if (tick)
        if (const uint16_t p = t.virq_port[VIRQ_TIMER].load(std::memory_order_relaxed)) evtchn_raise(*e, p, k);
    if (poll_due && (e->poll_mask.load(std::memory_order_seq_cst) >> v.id) & 1) evtchn_unblock(*e, v.id, k);
    return k;
}

} // namespace pvmmu
