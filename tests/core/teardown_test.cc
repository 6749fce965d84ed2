// relinquish_domain (core/domain_teardown.h): a domain that has ended gives
// every frame back — whatever it pinned, linked, mapped writable or had held
// for it — and the machine's invariants hold afterwards; other domains keep
// theirs.
#include "core/domain_teardown.h"
#include "core/refs.h"
#include "invariants/invariant_check.h"
#include "support/core_fixture.h"
#include "support/race_at.h"

namespace pvmmu::test {
namespace {

class TeardownTest : public CoreTest {
protected:
    uint64_t owned_by(DomId id)
    {
        uint64_t n = 0;
        for (uint64_t i = 0; i < hv().mem().nr_frames; ++i)
            if (frame(Mfn{i}).owner.load() == id) ++n;
        return n;
    }
    void expect_all_free()
    {
        EXPECT_EQ(owned_by(kDom), 0u);
        for (uint64_t g = 0; g < kDomFrames; ++g) {
            const FrameInfo& f = frame(lay.mfn(g));
            EXPECT_EQ(f.count.load(), 0u) << g;
            EXPECT_EQ(f.type_count(), 0u) << g;
            EXPECT_FALSE(f.pinned()) << g;
        }
        EXPECT_EQ(hv().domain(kDom), nullptr);
        EXPECT_TRUE(invariants_hold(m));
    }
};

TEST_F(TeardownTest, ABuiltDomainGivesEveryFrameBack)
{
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.freed, kDomFrames);
    EXPECT_EQ(r.kept, 0u);
    expect_all_free();
}

TEST_F(TeardownTest, PinsLinksWritableMappingsBasePointersAndHeldFramesAllGo)
{
    // gpfn 600 becomes a pinned L1 that maps gpfn 700 writable and is linked
    // from the L2; vCPU 1 gets the L4 as its user base pointer too; gpfn 800
    // is held by the hypervisor.
    make_read_only(600);
    table(lay.mfn(600))[0] = map(700, kDataFlags);
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(600))}, &done), 0);
    must_update(mmu_update_t{ptr(l2(), 7, MMU_NORMAL_PT_UPDATE), map(lay.mfn(600), kTableLinkFlags)});
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_NEW_USER_BASEPTR, l4())}, &done, &v1()), 0);
    ASSERT_EQ(hold_writable(hv(), *d, lay.mfn(800)), 0);
    ASSERT_TRUE(invariants_hold(m));

    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.freed, kDomFrames);
    EXPECT_EQ(r.kept, 0u);
    EXPECT_EQ(d->nr_held, 0u);
    EXPECT_FALSE(v0().has_table || v1().has_table || v1().has_user_table);
    expect_all_free();
}

TEST_F(TeardownTest, AnotherDomainKeepsItsFrames)
{
    DomainLayout lay2;
    Domain* d2 = m.create_domain(2, 64, 1, lay2, 2);
    ASSERT_NE(d2, nullptr);
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.freed, kDomFrames);
    EXPECT_EQ(owned_by(2), 64u);
    EXPECT_EQ(hv().domain(2), d2);
    EXPECT_TRUE(frame(lay2.l4).pinned());
    expect_all_free();
}

TEST_F(TeardownTest, AFrameStillReferencedIsKeptAndNotFreed)
{
    // A reference nobody should hold (as a reference-counting bug would
    // leave): that frame stays the domain's, the domain stays registered.
    ASSERT_EQ(get_page(hv(), lay.mfn(900), kDom), 0);
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.kept, 1u);
    EXPECT_EQ(r.freed, kDomFrames - 1);
    EXPECT_EQ(frame(lay.mfn(900)).owner.load(), kDom);
    EXPECT_EQ(hv().domain(kDom), d);
    put_page(hv(), lay.mfn(900));
}

// Domain 2, allowed to map foreign frames, maps domain 1's gpfn 900 read-only
// at its own gpfn 40 while domain 1 is torn down (docs/security.md §7.6).
class TeardownRaceTest : public TeardownTest {
protected:
    void SetUp() override
    {
        TeardownTest::SetUp();
        d2 = m.create_domain(2, 64, 1, lay2, 2);
        ASSERT_NE(d2, nullptr);
        d2->policy.allow(Perm::MapForeign);
    }
    long map_foreign()
    {
        // Domain 2's only L1 is its gpfn 3 (64 frames: L4, L3, L2, L1).
        const mmu_update_t r{ptr(lay2.mfn(3), 40, MMU_NORMAL_PT_UPDATE), map(lay.mfn(900), P | US | A)};
        unsigned done = 0;
        return m.call(d2->vcpus[0], __HYPERVISOR_mmu_update, uint64_t(&r), 1, uint64_t(&done), kDom);
    }
    // Either the mapping failed and the frame is free, or it holds a reference
    // and the frame is kept, still domain 1's: never a free frame referenced.
    void expect_mapped_and_kept_or_refused_and_free(long mapped, const TeardownResult& r)
    {
        const FrameInfo& f = frame(lay.mfn(900));
        if (mapped == 0) {
            EXPECT_EQ(f.owner.load(), kDom);
            EXPECT_EQ(f.count.load(), 1u);
            EXPECT_EQ(r.kept, 1u);
            EXPECT_EQ(hv().domain(kDom), d);
        } else {
            EXPECT_EQ(mapped, -XEN_EPERM);
            EXPECT_EQ(f.owner.load(), kOwnerFree);
            EXPECT_EQ(f.count.load(), 0u);
            EXPECT_EQ(r.freed, kDomFrames);
        }
        EXPECT_TRUE(invariants_hold(m));
    }

    DomainLayout lay2;
    Domain* d2 = nullptr;
};

// The mapping comes between the two steps by which teardown gives 900 back.
TEST_F(TeardownRaceTest, AForeignMappingMadeWhileAFrameIsGivenBackFailsOrKeepsIt)
{
    long mapped = 1;
    TeardownResult r;
    {
        RaceAt race(hv(), RacePoint::TeardownGiveBack, lay.mfn(900), [&] { mapped = map_foreign(); });
        r = relinquish_domain(hv(), *d);
        ASSERT_TRUE(race.fired());
    }
    expect_mapped_and_kept_or_refused_and_free(mapped, r);
}

// The whole teardown comes between the mapping's count and its second look at
// the owner.
TEST_F(TeardownRaceTest, ATeardownBetweenAForeignMappingsCountAndOwnerCheckKeepsTheFrame)
{
    long mapped = 1;
    TeardownResult r;
    {
        RaceAt race(hv(), RacePoint::GetPageCounted, lay.mfn(900), [&] { r = relinquish_domain(hv(), *d); });
        mapped = map_foreign();
        ASSERT_TRUE(race.fired());
    }
    expect_mapped_and_kept_or_refused_and_free(mapped, r);
}

// Domain 2's get_page of gpfn 900 raises its count just after teardown set the
// owner free, finds it free and drops the reference again, but only after
// teardown read the count: the first pass keeps a frame that nothing
// references any more. Teardown must try it again and give it back, or the
// domain stays registered for good. The drop is placed at the next frame's
// give-back: any instant after teardown read 900's count would do.
TEST_F(TeardownRaceTest, AFrameKeptForAReferenceDroppedAgainIsGivenBackAfterAll)
{
    struct Peer {
        Hypervisor* hv;
        Mfn target;
        bool counted = false, dropped = false, saw_free = false;
    } peer{&hv(), lay.mfn(900)};
    ASSERT_TRUE(race_points_compiled());
    hv().set_race_hook([](void* ctx, RacePoint p, Mfn at) {
        Peer& q = *static_cast<Peer*>(ctx);
        if (p != RacePoint::TeardownGiveBack) return;
        FrameInfo& f = q.hv->frame(q.target);
        if (at == q.target && !q.counted) {
            // get_page: count first, then the owner, which is free: refused.
            f.count.fetch_add(1);
            q.saw_free = f.owner.load() == kOwnerFree;
            q.counted = true;
        } else if (q.counted && !q.dropped) {
            put_page(*q.hv, q.target);   // ... and its reference goes
            q.dropped = true;
        }
    }, &peer);
    const TeardownResult r = relinquish_domain(hv(), *d);
    hv().set_race_hook(nullptr, nullptr);
    ASSERT_TRUE(peer.counted && peer.dropped);
    EXPECT_TRUE(peer.saw_free) << "the racing get_page would not have been refused";

    EXPECT_EQ(r.kept, 0u) << "a frame nothing references was kept";
    EXPECT_EQ(r.freed, kDomFrames);
    EXPECT_EQ(frame(lay.mfn(900)).owner.load(), kOwnerFree);
    expect_all_free();
}

} // namespace
} // namespace pvmmu::test
