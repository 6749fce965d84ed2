// A vCPU seen through a transport that stops it around chosen hypercalls, so
// another vCPU can act at exactly that moment — inside a library operation,
// between its reads and its install, or between two of its hypercalls. Races
// that a loaded host would almost never schedule become certain, and tests
// stay exact whatever the scheduling. Guest code only (the library's own
// Transport interface).
#pragma once

#include "guest/cpu.h"

namespace pvmmu::guest::testing {

class Probing final : public Transport {
public:
    using Probe = void (*)(void* ctx);

    // fn(ctx) runs before (or after) every hypercall `op` (or every one, op ~0u).
    Probing(Transport& inner, unsigned op, bool before, Probe fn, void* ctx)
        : inner_(inner), op_(op), before_(before), fn_(fn), ctx_(ctx)
    {
    }

    long hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4) override
    {
        const bool mine = armed && (op_ == ~0u || op == op_);
        if (mine && before_) fn_(ctx_);
        const long rc = inner_.hypercall(op, a0, a1, a2, a3, a4);
        if (mine && !before_) fn_(ctx_);
        return rc;
    }
    void relax() override { inner_.relax(); }

    bool armed = true;

private:
    Transport& inner_;
    unsigned op_;
    bool before_;
    Probe fn_;
    void* ctx_;
};

// The same vCPU (same memory, scratch pages, guest) behind a Probing transport.
struct ProbedCpu {
    ProbedCpu(Cpu& c, unsigned op, bool before, Probing::Probe fn, void* ctx)
        : probing(c.hc, op, before, fn, ctx), cpu(probing, c.mem, c.id)
    {
        cpu.guest = c.guest;
        cpu.scratch = c.scratch;
    }
    Probing probing;
    Cpu cpu;
};

} // namespace pvmmu::guest::testing
