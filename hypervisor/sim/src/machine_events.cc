// The simulated machine as the platform of the core's events and time
// (core/event_ops.h): it dispatches the hypercalls, gives time from the
// host's steady clock, and "halts" a blocked vCPU by spinning on its own
// thread, serving shootdowns and firing its due timers, until an event or a
// poll timeout wakes it. Kicks need nothing more: each vCPU is a thread that
// reads its own vcpu_info.
#include <chrono>

#include "core/event_ops.h"
#include "sim/machine.h"

namespace pvmmu::sim {

namespace {

uint64_t steady_ns()
{
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

} // namespace

uint64_t Machine::system_time_ns() const
{
    return start_ns_ ? steady_ns() - start_ns_ : 0;
}

DomainEvents* Machine::enable_events(Domain& d, const DomainLayout& layout, uint64_t shared_gpfn)
{
    if (!start_ns_) start_ns_ = steady_ns();
    auto* shared = static_cast<shared_info_t*>(hv_.mem().frame(layout.mfn(shared_gpfn)));
    *shared = shared_info_t{};
    for (unsigned i = 0; i < XEN_LEGACY_MAX_VCPUS; ++i) shared->vcpu_info[i].evtchn_upcall_mask = 1;
    d.events = events_.emplace_back(std::make_unique<DomainEvents>(shared)).get();
    return d.events;
}

HcResult Machine::arch_hypercall(Vcpu& v, HypercallFrame& f)
{
    EventOut out;
    const HcResult r = event_hypercall(hv_, v, f, system_time_ns(), out);
    (void)timer_expire(hv_, v, system_time_ns());
    while (out.block && vcpu_blocked(v)) {
        relax();
        (void)timer_expire(hv_, v, system_time_ns());
    }
    return r;
}

} // namespace pvmmu::sim
