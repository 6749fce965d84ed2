// Domain teardown against a foreign mapper on another thread (docs/security.md
// §7.6): while domain 1 gives its frames back, a domain allowed to map foreign
// frames keeps taking general references to them (get_page with domain 1 as
// owner, what its L1 entries would take), keeping some and dropping the rest.
// Afterwards no free frame may be referenced, every frame still referenced is
// still domain 1's, and each count is what the mapper holds. Yields at the
// race points widen both windows. The exact interleavings are
// TeardownRaceTest.* (tests/core/teardown_test.cc).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "core/domain_teardown.h"
#include "core/refs.h"
#include "sim/direct_machine.h"

namespace pvmmu::test {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr unsigned kRounds = 40;
#else
constexpr unsigned kRounds = 300;
#endif
constexpr DomId kDom = 1;
constexpr uint64_t kFrames = 64;

TEST(TeardownRace, NoFreeFrameIsLeftReferencedByAForeignMapping)
{
    ASSERT_TRUE(race_points_compiled());
    uint64_t kept = 0, kept_unreferenced = 0, freed_under_a_reference = 0;
    for (unsigned round = 0; round < kRounds; ++round) {
        sim::DirectMachine m(sim::Arena::kXenFrames + sim::Arena::kIoFrames + kFrames);
        DomainLayout lay;
        Domain* d = m.create_domain(kDom, kFrames, 1, lay);
        ASSERT_NE(d, nullptr);
        Hypervisor& hv = m.hv();
        hv.set_race_hook([](void*, RacePoint p, Mfn) {
            if (p == RacePoint::GetPageCounted || p == RacePoint::TeardownGiveBack) std::this_thread::yield();
        }, nullptr);

        uint32_t held[kFrames] = {};
        std::atomic<bool> started{false}, stop{false};
        std::thread mapper([&] {
            started.store(true, std::memory_order_release);
            for (uint64_t i = round; !stop.load(std::memory_order_acquire); ++i) {
                const uint64_t g = i % kFrames;
                if (get_page(hv, lay.mfn(g), kDom) != 0) continue;
                if (i % 4 == 0) ++held[g];
                else put_page(hv, lay.mfn(g));
            }
        });
        while (!started.load(std::memory_order_acquire)) std::this_thread::yield();
        const TeardownResult r = relinquish_domain(hv, *d);
        stop.store(true, std::memory_order_release);
        mapper.join();
        hv.set_race_hook(nullptr, nullptr);

        for (uint64_t g = 0; g < kFrames; ++g) {
            const FrameInfo& f = hv.frame(lay.mfn(g));
            EXPECT_EQ(f.count.load(), held[g]) << "round " << round << " gpfn " << g;
            if (f.owner.load() == kOwnerFree && f.count.load() != 0) ++freed_under_a_reference;
            // Kept for a reference the mapper dropped again: safe, not wanted.
            if (f.owner.load() == kDom && !held[g]) ++kept_unreferenced;
            if (held[g]) {
                EXPECT_EQ(f.owner.load(), kDom) << "round " << round << " gpfn " << g;
            }
            for (; held[g]; --held[g]) put_page(hv, lay.mfn(g));
        }
        kept += r.kept;
    }
    EXPECT_EQ(freed_under_a_reference, 0u) << "free frames left referenced by the mapper";
    ::testing::Test::RecordProperty("kept", std::to_string(kept));
    ::testing::Test::RecordProperty("kept_unreferenced", std::to_string(kept_unreferenced));
}

} // namespace
} // namespace pvmmu::test
