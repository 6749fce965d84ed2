// A chosen interleaving, replayed on one thread: runs `fn` when the core
// reaches race point `p` (core/race_point.h) for a chosen frame, as another
// CPU acting at that instant would. The hook is removed when the object goes.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "core/hypervisor.h"

namespace pvmmu::test {

class RaceAt {
public:
    // The first time p is reached for frame m.
    RaceAt(Hypervisor& hv, RacePoint p, Mfn m, std::function<void()> fn)
        : RaceAt(hv, p, [m](Mfn f) { return f == m; }, std::move(fn), 1)
    {
    }
    // Each time p is reached for a frame `when` accepts, up to `limit` times;
    // never from inside fn itself (what fn does may reach the point again).
    RaceAt(Hypervisor& hv, RacePoint p, std::function<bool(Mfn)> when, std::function<void()> fn,
           unsigned limit = ~0u)
        : hv_(hv), p_(p), when_(std::move(when)), fn_(std::move(fn)), limit_(limit)
    {
        EXPECT_TRUE(race_points_compiled()) << "this test must link pvmmu_sim_races";
        hv_.set_race_hook(&RaceAt::hit, this);
    }
    ~RaceAt() { hv_.set_race_hook(nullptr, nullptr); }
    RaceAt(const RaceAt&) = delete;
    RaceAt& operator=(const RaceAt&) = delete;

    bool fired() const { return times_ > 0; }
    unsigned times() const { return times_; }

private:
    static void hit(void* ctx, RacePoint p, Mfn m)
    {
        RaceAt& self = *static_cast<RaceAt*>(ctx);
        if (self.inside_ || self.times_ >= self.limit_ || p != self.p_ || !self.when_(m)) return;
        self.inside_ = true;
        ++self.times_;
        self.fn_();
        self.inside_ = false;
    }

    Hypervisor& hv_;
    RacePoint p_;
    std::function<bool(Mfn)> when_;
    std::function<void()> fn_;
    unsigned limit_;
    unsigned times_ = 0;
    bool inside_ = false;
};

} // namespace pvmmu::test
