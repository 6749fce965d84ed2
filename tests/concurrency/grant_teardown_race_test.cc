// A granter torn down under a live pin, against the pin's release on another
// thread (docs/architecture.md "Grant tables"): the mapper's unmap of the
// last mapping, a GNTTABOP_copy that pinned before the teardown, or the
// mapper's own teardown. Whichever ends last gives the granter back
// (core/grant_table.h grant_unpin, keep_until_unpinned): each round ends
// with every frame of the granter free and referenced by nothing, counted
// once by its teardown (freed + kept is its size), the granter no longer
// registered, and the invariant checker clean. The other thread starts its
// part once the teardown has tried k frames (or has returned), k varying by
// round, the teardown waiting there for it to start (in some rounds until
// its unpin), so the release lands before, inside and after the teardown's
// passes whatever the scheduling; rounds go on until both ends were seen
// giving the granter back. The race points (core/race_point.h) only choose
// where the threads meet; the outcome is theirs.
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>

#include "invariants/invariant_check.h"
#include "support/grant_fixture.h"

namespace pvmmu::test {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr unsigned kMinRounds = 8, kMaxRounds = 400;
#else
constexpr unsigned kMinRounds = 24, kMaxRounds = 4000;
#endif

// The teardown's progress, seen from the race point between the two steps
// of giving a frame back (domain_teardown.cc give_back).
struct Progress {
    std::atomic<unsigned> tried{0};
    std::atomic<bool> done{false};
    Mfn mapped{0};
    // A copy's get_page of the granted frame on the thread that set
    // t_stall waits there, pin and reference held, until the teardown has
    // tried stall_k frames or has returned.
    unsigned stall_k = 0;
    std::atomic<bool> stalled{false};
    // The teardown's hold_at-th try waits for the other thread to start, so
    // that what the other thread does lands near that point however the
    // threads are scheduled.
    unsigned hold_at = 0;
    std::atomic<bool> started{false};
    // And then, with `entry` set, until the other thread's unpin has
    // cleared the entry's GTF_reading, `holding` meanwhile.
    grant_entry_v1_t* entry = nullptr;
    std::atomic<bool> holding{false};
    // The mapper's teardown, on the thread that set t_l1_waits, about to
    // drop its L1 `l1` (and with it the mapping's references): unless the
    // granter's teardown is held with the pin still there, it waits for
    // that teardown to return. A pin released before the mapping's
    // references go is then seen by the granter's teardown with the
    // references still there.
    Mfn l1{~0ull};
};

// When the other thread starts: once the teardown has tried k frames (the
// granter has kFrames; a second pass tries the kept ones again), ~0u once
// it has returned; and whether the teardown waits there for the unpin.
struct Plan {
    unsigned k = 0;
    bool until_unpinned = false;
};

thread_local bool t_stall = false, t_l1_waits = false;

bool teardown_at(const Progress& s, unsigned k)
{
    return s.tried.load(std::memory_order_acquire) >= k || s.done.load(std::memory_order_acquire);
}

bool reading(const Progress& s)
{
    return std::atomic_ref<uint16_t>(s.entry->flags).load() & GTF_reading;
}

void on_race_point(void* ctx, RacePoint p, Mfn m)
{
    auto& s = *static_cast<Progress*>(ctx);
    if (p == RacePoint::GetPageCounted && t_stall && m == s.mapped) {
        t_stall = false;
        s.stalled.store(true, std::memory_order_release);
        while (!teardown_at(s, s.stall_k)) std::this_thread::yield();
        return;
    }
    if (p == RacePoint::LastTypeDrop && t_l1_waits && m == s.l1) {
        t_l1_waits = false;
        while (!s.done.load(std::memory_order_acquire) && !(s.holding.load(std::memory_order_acquire) && reading(s)))
            std::this_thread::yield();
        return;
    }
    if (p != RacePoint::TeardownGiveBack) return;
    if (s.tried.fetch_add(1, std::memory_order_acq_rel) + 1 != s.hold_at) return;
    while (!s.started.load(std::memory_order_acquire)) std::this_thread::yield();
    if (!s.entry) {
        std::this_thread::yield();
        return;
    }
    s.holding.store(true, std::memory_order_release);
    while (reading(s)) std::this_thread::yield();
    s.holding.store(false, std::memory_order_release);
}

// Who gave the granter back: its own teardown, or the release of the last pin.
struct Seen {
    unsigned by_teardown = 0, by_release = 0;
    bool both() const { return by_teardown && by_release; }
};

// One machine per round: the grant fixture, set up afresh.
class Round : public GrantTest {
public:
    static constexpr uint64_t kGranted = 500;   // the granter's gpfn its grant offers
    static constexpr uint64_t kAt = 40;         // the mapper's gpfn the grant is mapped at
    static constexpr uint64_t kCopyTo = 41;     // the mapper's frame a copy writes
    static constexpr grant_ref_t kRef = 5;
    static constexpr uint64_t kPeerFrames = 64;
    static constexpr uint64_t kFrames = kDomFrames;   // the granter's

    Round() { GrantTest::SetUp(); }
    void TestBody() override {}

    // The granter's teardown on one thread, `other` on another once the
    // teardown has tried `k` frames or has returned. With `stall` set,
    // `other` starts at once and its first get_page of the granted frame
    // waits for the teardown to reach k, which starts only then.
    template <class Other>
    TeardownResult race(const Plan& plan, Other other, bool stall = false)
    {
        Progress p;
        p.mapped = lay.mfn(kGranted);
        p.l1 = lay2.mfn(lay2.l1_gpfn(kAt));
        const unsigned k = plan.k;
        p.stall_k = k;
        p.hold_at = stall ? 0 : k;
        if (plan.until_unpinned) p.entry = &entry(kRef);
        hv().set_race_hook(&on_race_point, &p);
        std::atomic<bool> go{false};
        TeardownResult r;
        std::thread teardown([&] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            while (stall && !p.stalled.load(std::memory_order_acquire)) std::this_thread::yield();
            r = relinquish_domain(hv(), *d);
            p.done.store(true, std::memory_order_release);
        });
        std::thread releaser([&] {
            while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
            t_stall = stall;
            t_l1_waits = plan.until_unpinned;
            while (!stall && !teardown_at(p, k)) std::this_thread::yield();
            p.started.store(true, std::memory_order_release);
            other();
        });
        go.store(true, std::memory_order_release);
        teardown.join();
        releaser.join();
        hv().set_race_hook(nullptr, nullptr);
        return r;
    }

    // The granter's grant mapped by the mapper (set-up).
    grant_handle_t map_it()
    {
        setup();
        grant(kRef, kGranted);
        const gnttab_map_grant_ref_t op = map_grant(kRef, peer_va(kAt));
        EXPECT_EQ(op.status, GNTST_okay);
        return op.handle;
    }

    // What every order must end with; `round` names the round in a failure.
    void check_granter_gone(const TeardownResult& r, unsigned round, Seen& seen)
    {
        EXPECT_EQ(hv().domain(kDom), nullptr) << "round " << round << ": kept " << r.kept;
        EXPECT_EQ(r.freed + r.kept, kDomFrames) << "round " << round;
        unsigned left = 0;
        for (uint64_t g = 0; g < kDomFrames; ++g) {
            const FrameInfo& f = frame(lay.mfn(g));
            if (f.owner.load() != kOwnerFree || f.count.load() != 0 || f.type_count() != 0) ++left;
        }
        EXPECT_EQ(left, 0u) << "round " << round << ": frames of the granter not given back";
        EXPECT_TRUE(invariants_hold(m)) << "round " << round;
        if (r.kept) ++seen.by_release;
        else ++seen.by_teardown;
    }

    // The mapper's frames, all given back by its own teardown.
    void check_mapper_gone(unsigned round)
    {
        EXPECT_EQ(hv().domain(kPeer), nullptr) << "round " << round;
        unsigned left = 0;
        for (uint64_t g = 0; g < kPeerFrames; ++g)
            if (frame(lay2.mfn(g)).owner.load() != kOwnerFree || frame(lay2.mfn(g)).count.load() != 0) ++left;
        EXPECT_EQ(left, 0u) << "round " << round << ": frames of the mapper not given back";
    }

    // (1) The granter's teardown against the mapper's unmap of its mapping.
    void unmap_round(unsigned round, const Plan& plan, Seen& seen)
    {
        const grant_handle_t h = map_it();
        int16_t st = 99;
        const TeardownResult r = race(plan, [&] { grant_unmap_one(hv(), p0(), peer_va(kAt), 0, h, st, false); });
        EXPECT_EQ(st, GNTST_okay) << "round " << round;
        EXPECT_FALSE(Pte{*peer_pte(kAt)}.present()) << "round " << round;
        EXPECT_NE(hv().domain(kPeer), nullptr);
        check_granter_gone(r, round, seen);
    }

    // (2) The granter's teardown against copies from its grant: the first
    // pinned before the teardown and waits, its general reference on the
    // frame taken, until the teardown has tried k frames; the next are
    // refused once the table is dying.
    void copy_round(unsigned round, const Plan& plan, Seen& seen, unsigned& copied)
    {
        setup();
        grant(kRef, kGranted, GTF_permit_access | GTF_readonly);
        const TeardownResult r = race(plan, [&] {
            for (unsigned i = 0; i < 1000; ++i) {
                gnttab_copy_t op{};
                op.source.u.ref = kRef;
                op.source.domid = kDom;
                op.dest.u.gmfn = lay2.mfn(kCopyTo).v;
                op.dest.domid = DOMID_SELF;
                op.len = 64;
                op.flags = GNTCOPY_source_gref;
                op.status = 99;
                grant_copy_one(hv(), p0(), op);
                if (op.status != GNTST_okay) break;   // the table is dying, or gone
                ++copied;
            }
        }, true);
        check_granter_gone(r, round, seen);
    }

    // (3) Both domains torn down at once, the mapping live.
    void both_round(unsigned round, const Plan& plan, Seen& seen)
    {
        (void)map_it();
        const TeardownResult r = race(plan, [&] { (void)relinquish_domain(hv(), *d2); });
        check_mapper_gone(round);
        check_granter_gone(r, round, seen);
    }
};

// At once, anywhere in the first pass, about its end, about its end and
// waiting for the unpin there, or once the teardown has returned.
Plan pick(std::minstd_rand& rng)
{
    switch (rng() % 5) {
    case 0: return {};
    case 1: return {unsigned(rng() % Round::kFrames)};
    case 2: return {unsigned(Round::kFrames - 8 + rng() % 10)};
    case 3: return {unsigned(Round::kFrames - rng() % 64), true};
    default: return {~0u};
    }
}

template <class Body>
Seen run_rounds(Body body)
{
    Seen seen;
    std::minstd_rand rng(2026);
    unsigned round = 0;
    for (; round < kMaxRounds && (round < kMinRounds || !seen.both()); ++round) {
        Round w;
        body(w, round, pick(rng), seen);
        if (::testing::Test::HasFailure()) break;
    }
    ::testing::Test::RecordProperty("rounds", std::to_string(round));
    ::testing::Test::RecordProperty("by_teardown", std::to_string(seen.by_teardown));
    ::testing::Test::RecordProperty("by_release", std::to_string(seen.by_release));
    return seen;
}

TEST(GrantTeardownRace, TheGrantersTeardownAgainstTheLastUnmapGivesEverythingBackOnce)
{
    ASSERT_TRUE(race_points_compiled());
    const Seen seen = run_rounds([](Round& w, unsigned round, const Plan& plan, Seen& s) { w.unmap_round(round, plan, s); });
    EXPECT_TRUE(seen.both()) << "the teardown gave the granter back " << seen.by_teardown
                             << " times, the unmap " << seen.by_release;
}

TEST(GrantTeardownRace, TheGrantersTeardownAgainstACopyInFlightGivesEverythingBackOnce)
{
    ASSERT_TRUE(race_points_compiled());
    unsigned copied = 0;
    const Seen seen =
        run_rounds([&](Round& w, unsigned round, const Plan& plan, Seen& s) { w.copy_round(round, plan, s, copied); });
    EXPECT_GT(copied, 0u);
    EXPECT_TRUE(seen.both()) << "the teardown gave the granter back " << seen.by_teardown
                             << " times, a copy " << seen.by_release;
}

TEST(GrantTeardownRace, BothDomainsTornDownAtOnceGiveEverythingBackOnce)
{
    ASSERT_TRUE(race_points_compiled());
    const Seen seen = run_rounds([](Round& w, unsigned round, const Plan& plan, Seen& s) { w.both_round(round, plan, s); });
    EXPECT_TRUE(seen.both()) << "the granter's teardown gave it back " << seen.by_teardown
                             << " times, the mapper's " << seen.by_release;
}

} // namespace
} // namespace pvmmu::test
