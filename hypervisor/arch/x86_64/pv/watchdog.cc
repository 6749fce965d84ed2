// SCHEDOP_watchdog (<xen/sched.h>), as Xen 4.17 answers it (common/sched/
// core.c): a domain has two watchdog timers. id 0 takes a free one, armed
// `timeout` seconds from now, and returns its id (1 or 2), -ENOSPC when both
// are in use; id 1 or 2 re-arms that one, or with timeout 0 frees it;
// -EINVAL for an id above 2 or one not in use. A timer that expires shuts
// the domain down with SHUTDOWN_watchdog (Xen 4.17 returns that -ENOSPC
// truncated to 32 bits; pvmmu returns it whole, docs/abi.md §10 "Shutdown").
// pvmmu looks at the deadlines on every return of one of the domain's vCPUs
// to the guest (watchdog_on_return, from guest_return_events in
// pv/event_delivery.cc), and each vCPU's CPU arms its timer for the
// earliest (watchdog_next), so a domain that spins or sleeps is caught.
#include <pvmmu/abi.h>

#include "boot/time.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "pv/run.h"
#include "pv/watchdog.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kTimers = 2;   // Xen's NR_DOMAIN_WATCHDOG_TIMERS
constexpr uint64_t kNsPerSecond = 1'000'000'000;

class WatchdogLock {
public:
    explicit WatchdogLock(GuestDomain& g) : g_(g) { g_.watchdog_lock.lock(core()->platform()); }
    ~WatchdogLock()
    {
        uint64_t next = GuestDomain::kWatchdogFree;
        for (uint64_t d : g_.watchdog_deadline) next = d < next ? d : next;
        g_.watchdog_next.store(next, std::memory_order_release);
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
    if (id > kTimers) return -XEN_EINVAL;
    GuestDomain& g = guest_domain(v);
    const uint64_t deadline = system_time_now() + uint64_t(timeout) * kNsPerSecond;
    const WatchdogLock held(g);
    if (id == 0) {
        for (unsigned i = 0; i < kTimers; ++i) {
            if (g.watchdog_deadline[i] != GuestDomain::kWatchdogFree) continue;
            g.watchdog_deadline[i] = deadline;
            return long(i) + 1;
        }
        return -XEN_ENOSPC;
    }
    uint64_t& d = g.watchdog_deadline[id - 1];
    if (d == GuestDomain::kWatchdogFree) return -XEN_EINVAL;
    d = timeout ? deadline : GuestDomain::kWatchdogFree;
    return 0;
}

unsigned watchdog_expired(Vcpu& v, uint64_t now)
{
    GuestDomain& g = guest_domain(v);
    if (now < g.watchdog_next.load(std::memory_order_acquire)) return 0;
    const WatchdogLock held(g);
    for (unsigned i = 0; i < kTimers; ++i)
        if (g.watchdog_deadline[i] <= now) return i + 1;
    return 0;   // re-armed or freed meanwhile
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
