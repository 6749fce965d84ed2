// One chosen interleaving, replayed on one thread: runs `fn` the first time the
// core reaches race point `p` for frame `m` (core/race_point.h), as another CPU
// acting at that instant would. The hook is removed when the object goes.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "core/hypervisor.h"

namespace pvmmu::test {

class RaceAt {
public:
    RaceAt(Hypervisor& hv, RacePoint p, Mfn m, std::function<void()> fn)
        : hv_(hv), p_(p), m_(m), fn_(std::move(fn))
    {
        EXPECT_TRUE(race_points_compiled()) << "this test must link pvmmu_sim_races";
        hv_.set_race_hook(&RaceAt::hit, this);
    }
    ~RaceAt() { hv_.set_race_hook(nullptr, nullptr); }
    RaceAt(const RaceAt&) = delete;
    RaceAt& operator=(const RaceAt&) = delete;

    bool fired() const { return fired_; }

private:
    static void hit(void* ctx, RacePoint p, Mfn m)
    {
        RaceAt& self = *static_cast<RaceAt*>(ctx);
        if (self.fired_ || p != self.p_ || m != self.m_) return;
        self.fired_ = true;   // before fn: what fn does may reach the point again
        self.fn_();
    }

    Hypervisor& hv_;
    RacePoint p_;
    Mfn m_;
    std::function<void()> fn_;
    bool fired_ = false;
};

} // namespace pvmmu::test
