// A hosted machine on the DirectPlatform: arena, hypervisor and domains built by
// the core's domain builder, driven from the calling thread. Unit tests and the
// core's instruction counts use it; the simulated SMP machine is sim/machine.h.
#pragma once

#include <deque>

#include "core/domain_builder.h"
#include "core/hypercall.h"
#include "sim/arena.h"
#include "sim/direct_platform.h"

namespace pvmmu::sim {

class DirectMachine {
public:
    explicit DirectMachine(uint64_t nr_frames = 4096, HvConfig cfg = {})
        : arena_(nr_frames), hv_(arena_.mem(), arena_.frames(), arena_.m2p(), platform_, cfg)
    {
        platform_.attach(hv_);
    }

    // A domain with `nr_frames` frames and `vcpus` vCPUs on CPUs first_cpu...
    // Returns nullptr if the arena has no room (-ENOMEM in *rc, as
    // sim::Machine) or the builder refused (its errno in *rc).
    Domain* create_domain(DomId id, uint64_t nr_frames, unsigned vcpus, DomainLayout& layout,
                          CpuId first_cpu = 0, int* rc = nullptr)
    {
        Domain& d = domains_.emplace_back();
        DomainSpec spec;
        spec.id = id;
        spec.nr_vcpus = vcpus;
        spec.first_cpu = first_cpu;
        spec.first = arena_.allocate(nr_frames);
        spec.nr_frames = nr_frames;
        const int r = spec.first.v == ~0ull ? -XEN_ENOMEM : build_domain(hv_, d, spec, layout);
        if (rc) *rc = r;
        return r == 0 ? &d : nullptr;
    }

    // One hypercall as vCPU `v`, continued until it completes.
    long call(Vcpu& v, uint64_t op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
              uint64_t a3 = 0, uint64_t a4 = 0, unsigned* continuations = nullptr)
    {
        return hypercall_to_completion(hv_, v, HypercallFrame{op, {a0, a1, a2, a3, a4, 0}},
                                       continuations);
    }

    Hypervisor& hv() { return hv_; }
    Arena& arena() { return arena_; }
    DirectPlatform& platform() { return platform_; }
    uint64_t* table(Mfn m) { return hv_.mem().table(m); }

private:
    DirectPlatform platform_;
    Arena arena_;
    Hypervisor hv_;
    std::deque<Domain> domains_;
};

} // namespace pvmmu::sim
