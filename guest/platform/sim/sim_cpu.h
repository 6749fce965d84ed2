// The guest library's two interfaces on the simulated machine: one vCPU's
// GuestContext is both its hypercall transport and its memory accessor (every
// access goes through that CPU's TLB and walker, so A/D bits and faults are real).
// The only guest file besides main.cc that includes sim headers.
#pragma once

#include <thread>

#include "guest/platform.h"
#include "sim/guest_context.h"

namespace pvmmu::guest::simplat {

class SimCpu final : public Transport, public Memory {
public:
    // interleave: yield the host thread on every hypercall entry (see main.cc).
    SimCpu(sim::GuestContext& g, bool interleave) : g_(g), interleave_(interleave) {}

    long hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) override
    {
        if (interleave_) std::this_thread::yield();
        return g_.hypercall(op, a0, a1, a2, a3, a4);
    }
    void relax() override
    {
        g_.poll();
        std::this_thread::yield();   // more vCPU threads than host cores
    }

    bool load(Va va, uint64_t& out) override { return g_.load(Vaddr{va.v}, out); }
    bool store(Va va, uint64_t val) override { return g_.store(Vaddr{va.v}, val); }
    // The sim's machine memory, translated once (sim::GuestContext::direct).
    uint64_t* direct(Va va, uint64_t bytes) override { return g_.direct(Vaddr{va.v}, bytes); }
    bool cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped) override
    {
        return g_.cmpxchg(Vaddr{va.v}, expected, desired, swapped);
    }
    bool fetch(Va va) override { return g_.exec(Vaddr{va.v}); }
    void clean(Va va) override { g_.clean(Vaddr{va.v}); }

    sim::GuestContext& context() { return g_; }

private:
    sim::GuestContext& g_;
    const bool interleave_;
};

} // namespace pvmmu::guest::simplat
