// SCHEDOP_watchdog (<xen/sched.h>) on bare metal: the timers' state is the
// core's (core/watchdog.h says how Xen 4.17 answers); this file orders the
// calls with the domain's lock, reads system time and shuts the domain down
// with SHUTDOWN_watchdog when a timer expires (Xen 4.17 returns that -ENOSPC
// truncated to 32 bits; pvmmu returns it whole, docs/abi.md §10 "Shutdown").
// pvmmu looks at the deadlines on the returns of the domain's vCPUs to the
// guest that check the timers (watchdog_on_return, from guest_return_events
// in pv/event_delivery.cc; pv/events.h says which), and each vCPU's CPU arms
// its timer for the earliest (watchdog_next), kicked to do so when another
// vCPU moves it earlier, so a domain that spins or sleeps is caught.
#include <pvmmu/abi.h>

#include "boot/time.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "pv/events.h"
#include "pv/run.h"
#include "pv/watchdog.h"

namespace pvmmu::x86 {

namespace {

class WatchdogLock {
public:
    explicit WatchdogLock(GuestDomain& g) : g_(g) { g_.watchdog_lock.lock(core()->platform()); }
    ~WatchdogLock()
    {
        g_.watchdog_next.store(g_.watchdog.next(), std::memory_order_release);
        g_.watchdog_lock.unlock();
    }
    WatchdogLock(const WatchdogLock&) = delete;
    WatchdogLock& operator=(const WatchdogLock&) = delete;

private:
    GuestDomain& g_;
};

} // namespace

long watchdog_op(Vcpu& v, uint32_t id, uint32_t timeout)
{
    if (id > WatchdogTimers::kCount) return -XEN_EINVAL;
    GuestDomain& g = guest_domain(v);
    const uint64_t now = system_time_now();
    uint64_t before = 0, after = 0;
    long rc = 0;
    {
        const WatchdogLock held(g);
        before = g.watchdog.next();
        rc = g.watchdog.set(id, timeout, now);
        after = g.watchdog.next();
    }
    // Each of the domain's CPUs arms its timer for the earliest watchdog
    // deadline only on a return that looks (pv/events.h): one moved earlier
    // kicks the others, after the lock has published it, so that each arms
    // for it now. v's own CPU looks on this hypercall's return.
    if (after < before) {
        const Domain& d = *v.domain;
        Kicks k;
        for (unsigned i = 0; i < d.nr_vcpus; ++i)
            if (i != v.id) k.add(i);
        event_kick(v, k);
    }
    return rc;
}

unsigned watchdog_expired(Vcpu& v, uint64_t now)
{
    GuestDomain& g = guest_domain(v);
    if (now < g.watchdog_next.load(std::memory_order_acquire)) return 0;
    const WatchdogLock held(g);
    return g.watchdog.expired(now);   // 0: re-armed or freed meanwhile
}

void watchdog_on_return(Vcpu& v, uint64_t now)
{
    GuestDomain& g = guest_domain(v);
    const unsigned fired = watchdog_expired(v, now);
    if (!fired) return;
    printk("pvmmu: domain %u: watchdog timer %u fired\n", unsigned(g.dom.id), fired);
    guest_shutdown(SHUTDOWN_watchdog);
}

} // namespace pvmmu::x86
