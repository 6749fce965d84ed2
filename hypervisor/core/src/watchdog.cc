// A domain's watchdog timers: the state of SCHEDOP_watchdog (core/watchdog.h).
#include "core/watchdog.h"

#include <pvmmu/abi.h>

namespace pvmmu {

namespace {

constexpr uint64_t kNsPerSecond = 1'000'000'000;

} // namespace

long WatchdogTimers::set(uint32_t id, uint32_t timeout_s, uint64_t now)
{
    if (id > kCount) return -XEN_EINVAL;
    const uint64_t at = now + uint64_t(timeout_s) * kNsPerSecond;
    if (id == 0) {
        for (unsigned i = 0; i < kCount; ++i) {
            if (deadline[i] != kFree) continue;
            deadline[i] = at;
            return long(i) + 1;
        }
        return -XEN_ENOSPC;
    }
    uint64_t& d = deadline[id - 1];
    if (d == kFree) return -XEN_EINVAL;
    d = timeout_s ? at : kFree;
    return 0;
}

unsigned WatchdogTimers::expired(uint64_t now) const
{
    for (unsigned i = 0; i < kCount; ++i)
        if (deadline[i] <= now) return i + 1;
    return 0;
}

uint64_t WatchdogTimers::next() const
{
    uint64_t n = kFree;
    for (uint64_t d : deadline) n = d < n ? d : n;
    return n;
}

} // namespace pvmmu
