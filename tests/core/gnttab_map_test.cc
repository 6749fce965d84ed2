// GNTTABOP_map_grant_ref, unmap_grant_ref and unmap_and_replace
// (core/grant_table.h): the mapping's entry and references, the granter's
// GTF_reading / GTF_writing while it lives, the flush before the grant is
// released, and every abuse refused with Xen's GNTST_* and no side effect.
#include "support/grant_fixture.h"

namespace pvmmu::test {
namespace {

using GrantMapTest = GrantTest;

constexpr uint64_t kGranted = 500;   // domain 1's gpfn it grants
constexpr uint64_t kAt = 40;         // domain 2's gpfn whose address the mapping takes
constexpr uint64_t kGrantFlags = P | A | D | US | NX;

TEST_F(GrantMapTest, WritableMappingAtAnAddressHoldsAnL1EntrysReferencesAndTheGrantsFlags)
{
    setup();
    grant(5, kGranted);
    const Mfn f = lay.mfn(kGranted);
    const uint32_t count = frame(f).count;
    const uint64_t type = frame(f).type_count();
    const Mfn own = lay2.mfn(kAt);
    const uint32_t own_count = frame(own).count;

    const auto op = map_grant(5, peer_va(kAt));
    ASSERT_EQ(op.status, GNTST_okay);
    EXPECT_EQ(op.dev_bus_addr, maddr_of(f).v);
    EXPECT_EQ(*peer_pte(kAt), map(f, kGrantFlags | RW));
    EXPECT_EQ(frame(f).count, count + 1);
    EXPECT_EQ(frame(f).type_count(), type + 1);
    EXPECT_EQ(frame(own).count, own_count - 1);   // the entry it replaced gave up its frame
    EXPECT_EQ(flags(5), GTF_permit_access | GTF_reading | GTF_writing);
    EXPECT_TRUE(invariants_hold(m));

    // The unmap flushes domain 2's CPU while the grant is still held.
    uint16_t flags_at_flush = 0;
    uint64_t pte_at_flush = ~0ull;
    m.platform().on_flush = [&] {
        flags_at_flush = flags(5);
        pte_at_flush = *peer_pte(kAt);
    };
    const size_t flushes = m.platform().flushes.size();
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
    m.platform().on_flush = nullptr;
    ASSERT_EQ(m.platform().flushes.size(), flushes + 1);
    EXPECT_EQ(m.platform().flushes.back().cpus, cpus({2}));
    EXPECT_EQ(pte_at_flush, 0u);
    EXPECT_EQ(flags_at_flush, GTF_permit_access | GTF_reading | GTF_writing);
    EXPECT_EQ(*peer_pte(kAt), 0u);
    EXPECT_EQ(flags(5), GTF_permit_access);
    EXPECT_EQ(frame(f).count, count);
    EXPECT_EQ(frame(f).type_count(), type);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, ReadOnlyMappingTakesNoTypeReferenceAndOnlyGtfReading)
{
    setup();
    grant(6, kGranted, GTF_permit_access | GTF_readonly);
    const Mfn f = lay.mfn(kGranted);
    const uint64_t type = frame(f).type_count();
    const auto op = map_grant(6, peer_va(kAt), GNTMAP_host_map | GNTMAP_readonly);
    ASSERT_EQ(op.status, GNTST_okay);
    EXPECT_EQ(*peer_pte(kAt), map(f, kGrantFlags));
    EXPECT_EQ(frame(f).type_count(), type);
    EXPECT_EQ(flags(6), GTF_permit_access | GTF_readonly | GTF_reading);
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
    EXPECT_EQ(flags(6), GTF_permit_access | GTF_readonly);
}

TEST_F(GrantMapTest, ContainsPteMapsAtTheEntrysMachineAddressWithTheGuestsAvailableBits)
{
    setup();
    grant(7, kGranted);
    const uint32_t fl = GNTMAP_host_map | GNTMAP_contains_pte | GNTMAP_application_map | (5u << _GNTMAP_guest_avail0);
    const auto op = map_grant(7, peer_pte_maddr(kAt), fl);
    ASSERT_EQ(op.status, GNTST_okay);
    EXPECT_EQ(*peer_pte(kAt), map(lay.mfn(kGranted), kGrantFlags | RW | (5ull << 9)));
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(unmap_grant(op.handle, peer_pte_maddr(kAt)), GNTST_okay);
    EXPECT_EQ(*peer_pte(kAt), 0u);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, TwoMappingsOfOneGrantKeepItsFlagsUntilTheLastGoes)
{
    setup();
    grant(8, kGranted);
    const auto rw = map_grant(8, peer_va(kAt));
    const auto ro = map_grant(8, peer_va(kAt + 1), GNTMAP_host_map | GNTMAP_readonly);
    ASSERT_EQ(rw.status, GNTST_okay);
    ASSERT_EQ(ro.status, GNTST_okay);
    EXPECT_EQ(gt1->active(8).ro, 1u);
    EXPECT_EQ(gt1->active(8).rw, 1u);
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(unmap_grant(rw.handle, peer_va(kAt)), GNTST_okay);
    EXPECT_EQ(flags(8), GTF_permit_access | GTF_reading);
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(unmap_grant(ro.handle, peer_va(kAt + 1)), GNTST_okay);
    EXPECT_EQ(flags(8), GTF_permit_access);
}

// --- abuse: each refused with Xen's status, nothing changed -------------------

struct Refusal {
    const char* what;
    int16_t status;
};

TEST_F(GrantMapTest, MappingWithoutAValidGrantIsRefusedAndChangesNothing)
{
    setup();
    grant(1, kGranted, GTF_permit_access, /*to=*/3);                 // granted to someone else
    grant(2, kGranted, GTF_permit_access | GTF_readonly);            // read-only, mapped writable
    grant(3, kGranted, GTF_invalid);                                 // revoked
    grant(4, kGranted, GTF_accept_transfer);                         // not an access grant
    grant(9, 2000);                                                  // a frame that is not domain 1's
    Snapshot before(m);
    EXPECT_EQ(map_grant(1, peer_va(kAt)).status, GNTST_general_error);
    EXPECT_EQ(map_grant(2, peer_va(kAt)).status, GNTST_general_error);
    EXPECT_EQ(map_grant(3, peer_va(kAt)).status, GNTST_general_error);
    EXPECT_EQ(map_grant(4, peer_va(kAt)).status, GNTST_general_error);
    EXPECT_EQ(map_grant(9, peer_va(kAt)).status, GNTST_bad_page);
    EXPECT_EQ(map_grant(gnt::kEntriesPerFrame, peer_va(kAt)).status, GNTST_bad_gntref);   // past the table
    EXPECT_EQ(map_grant(5, peer_va(kAt), GNTMAP_host_map, /*dom=*/9).status, GNTST_bad_domain);
    EXPECT_EQ(map_grant(5, peer_va(kAt), GNTMAP_readonly).status, GNTST_bad_gntref);   // neither host nor device
    EXPECT_EQ(map_grant(5, peer_va(kAt), GNTMAP_device_map).status, GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(flags(2), GTF_permit_access | GTF_readonly);
    EXPECT_EQ(gt2->handle_limit(), 1u);   // handles were reserved and given back
    EXPECT_FALSE(gt1->active(2).pinned());
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, BadHostAddressesAreGeneralErrorAndGiveEverythingBack)
{
    setup();
    grant(5, kGranted);
    Snapshot before(m);
    EXPECT_EQ(map_grant(5, 0x8000'0000'0000'0000ull).status, GNTST_general_error);           // not canonical
    EXPECT_EQ(map_grant(5, 0x0000'1000'0000'0000ull).status, GNTST_general_error);           // no L1 there
    EXPECT_EQ(map_grant(5, peer_pte_maddr(kAt) + 4, GNTMAP_host_map | GNTMAP_contains_pte).status,
              GNTST_general_error);                                                   // misaligned
    EXPECT_EQ(map_grant(5, maddr_of(lay2.mfn(kAt)).v, GNTMAP_host_map | GNTMAP_contains_pte).status,
              GNTST_general_error);                                                   // a data frame
    EXPECT_EQ(map_grant(5, lay.pte_maddr(600).v, GNTMAP_host_map | GNTMAP_contains_pte).status,
              GNTST_general_error);                                                   // domain 1's L1
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(flags(5), GTF_permit_access);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, APageTableFrameGrantedIsNeverMappedWritable)
{
    setup();
    grant(5, lay.l1_gpfn(0));   // domain 1's L1, a validated table
    Snapshot before(m);
    EXPECT_EQ(map_grant(5, peer_va(kAt)).status, GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(flags(5), GTF_permit_access);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, AFrameMappedWritableThroughAGrantCannotBecomeAPageTable)
{
    setup();
    make_read_only(kGranted);   // the granter's own mapping gone read-only
    grant(5, kGranted);
    ASSERT_EQ(map_grant(5, peer_va(kAt)).status, GNTST_okay);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(kGranted))}, &done), -XEN_EINVAL);
    // Nor can the mapper make it one of its own tables.
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(kGranted))}, &done, &p0()), -XEN_EPERM);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, AReadOnlyGrantMappingCannotBeRaisedToWritableByMmuUpdate)
{
    setup();
    grant(5, kGranted);
    ASSERT_EQ(map_grant(5, peer_va(kAt), GNTMAP_host_map | GNTMAP_readonly).status, GNTST_okay);
    const mmu_update_t r{lay2.pte_maddr(kAt).v | MMU_NORMAL_PT_UPDATE, map(lay.mfn(kGranted), kGrantFlags | RW)};
    unsigned done = 0;
    EXPECT_EQ(mmu_update({r}, &done, DOMID_SELF, &p0()), -XEN_EPERM);
    EXPECT_EQ(*peer_pte(kAt), map(lay.mfn(kGranted), kGrantFlags));
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, UnmapTwiceOrAnotherDomainsHandleIsBadHandle)
{
    setup();
    grant(5, kGranted);
    const auto op = map_grant(5, peer_va(kAt));
    ASSERT_EQ(op.status, GNTST_okay);
    {
        Snapshot before(m);
        EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt), &v0()), GNTST_bad_handle);   // domain 1 has no such handle
        EXPECT_EQ(unmap_grant(op.handle + 1, peer_va(kAt)), GNTST_bad_handle);
        EXPECT_EQ(unmap_grant(kHandles * 4, peer_va(kAt)), GNTST_bad_handle);
        EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt + 1)), GNTST_general_error);   // not where it is
        EXPECT_TRUE(unchanged(before, m));
    }
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
    Snapshot before(m);
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_bad_handle);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, UnmapWithNoHostAddressDoesNothingAsXen)
{
    setup();
    grant(5, kGranted);
    const auto op = map_grant(5, peer_va(kAt));
    Snapshot before(m);
    EXPECT_EQ(unmap_grant(op.handle, 0), GNTST_okay);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
}

TEST_F(GrantMapTest, AMappingTheGuestOverwroteCannotBeUnmappedButStaysAccounted)
{
    setup();
    grant(5, kGranted);
    const auto op = map_grant(5, peer_va(kAt));
    const mmu_update_t r{lay2.pte_maddr(kAt).v | MMU_NORMAL_PT_UPDATE, 0};
    unsigned done = 0;
    ASSERT_EQ(mmu_update({r}, &done, DOMID_SELF, &p0()), 0);   // its references go with the entry
    Snapshot before(m);
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(flags(5), GTF_permit_access | GTF_reading | GTF_writing);   // in use until the mapper goes
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, ExhaustedMaptrackIsNoSpace)
{
    setup();
    grant(5, kGranted, GTF_permit_access | GTF_readonly);
    for (uint32_t i = 0; i < kHandles; ++i)
        ASSERT_EQ(map_grant(5, peer_va(kAt + i), GNTMAP_host_map | GNTMAP_readonly).status, GNTST_okay) << i;
    Snapshot before(m);
    EXPECT_EQ(map_grant(5, peer_va(kAt + kHandles), GNTMAP_host_map | GNTMAP_readonly).status, GNTST_no_space);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(gt1->active(5).ro, kHandles);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, DeniedGrantMapIsPermissionDenied)
{
    setup();
    grant(5, kGranted);
    d2->policy.deny(Perm::GrantMap);
    Snapshot before(m);
    EXPECT_EQ(map_grant(5, peer_va(kAt)).status, GNTST_permission_denied);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(GrantMapTest, UnmapAndReplaceMovesTheMappersOwnEntryIntoTheSlot)
{
    setup();
    grant(5, kGranted);
    const auto op = map_grant(5, peer_va(kAt));
    const uint64_t other = *peer_pte(kAt + 1);   // domain 2's own frame, mapped
    gnttab_unmap_and_replace_t r{};
    r.host_addr = peer_va(kAt);
    r.new_addr = peer_va(kAt + 1);
    r.handle = op.handle;
    ASSERT_EQ(gnttab(GNTTABOP_unmap_and_replace, &r, 1, &p0()), 0);
    EXPECT_EQ(r.status, GNTST_okay);
    EXPECT_EQ(*peer_pte(kAt), other);
    EXPECT_EQ(*peer_pte(kAt + 1), 0u);
    EXPECT_EQ(flags(5), GTF_permit_access);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, UnmapAndReplaceNeverMovesAnotherGrantMapping)
{
    setup();
    grant(5, kGranted);
    grant(6, kGranted + 1);
    const auto a = map_grant(5, peer_va(kAt));
    const auto b = map_grant(6, peer_va(kAt + 1));
    Snapshot before(m);
    gnttab_unmap_and_replace_t r{};
    r.host_addr = peer_va(kAt);
    r.new_addr = peer_va(kAt + 1);
    r.handle = a.handle;
    ASSERT_EQ(gnttab(GNTTABOP_unmap_and_replace, &r, 1, &p0()), 0);
    EXPECT_EQ(r.status, GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(unmap_grant(b.handle, peer_va(kAt + 1)), GNTST_okay);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, UnmapAndReplaceOfAMappingMadeAtAPteAddressIsGeneralError)
{
    setup();
    grant(5, kGranted);
    const auto a = map_grant(5, peer_pte_maddr(kAt), GNTMAP_host_map | GNTMAP_contains_pte);
    ASSERT_EQ(a.status, GNTST_okay);
    Snapshot before(m);
    gnttab_unmap_and_replace_t r{};
    r.host_addr = peer_pte_maddr(kAt);
    r.new_addr = peer_va(kAt + 1);
    r.handle = a.handle;
    ASSERT_EQ(gnttab(GNTTABOP_unmap_and_replace, &r, 1, &p0()), 0);
    EXPECT_EQ(r.status, GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(unmap_grant(a.handle, peer_pte_maddr(kAt)), GNTST_okay);
    EXPECT_TRUE(invariants_hold(m));
}

// --- teardown ------------------------------------------------------------------

TEST_F(GrantMapTest, TheMappersTeardownReleasesItsMappingsAndTheGrantersFlags)
{
    setup();
    grant(5, kGranted);
    grant(6, kGranted + 1, GTF_permit_access | GTF_readonly);
    const Mfn f = lay.mfn(kGranted);
    const uint32_t count = frame(f).count;
    const uint64_t type = frame(f).type_count();
    ASSERT_EQ(map_grant(5, peer_va(kAt)).status, GNTST_okay);
    ASSERT_EQ(map_grant(6, peer_va(kAt + 1), GNTMAP_host_map | GNTMAP_readonly).status, GNTST_okay);
    const TeardownResult r = relinquish_domain(hv(), *d2);
    EXPECT_EQ(r.kept, 0u);
    EXPECT_EQ(flags(5), GTF_permit_access);
    EXPECT_EQ(flags(6), GTF_permit_access | GTF_readonly);
    EXPECT_EQ(frame(f).count, count);
    EXPECT_EQ(frame(f).type_count(), type);
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantMapTest, TheGrantersTeardownKeepsMappedFramesAndRefusesNewMaps)
{
    setup();
    grant(5, kGranted);
    grant(6, kGranted + 1);
    const auto op = map_grant(5, peer_va(kAt));
    ASSERT_EQ(op.status, GNTST_okay);
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_GT(r.kept, 0u);                 // the mapped frame and the table's frame
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(map_grant(6, peer_va(kAt + 1)).status, GNTST_general_error);   // the granter is dying
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
    EXPECT_TRUE(invariants_hold(m));
}

// What a granter torn down under a live mapping keeps is what the mapping
// holds, no more (Xen too keeps a dying domain's pages while foreign
// mappings reference them): the mapped frame and the table frame, its
// active entries reachable for the mapper's unmap. The unmap works, and
// its last unpin gives both back and removes the domain.
TEST_F(GrantMapTest, AGranterTornDownUnderAMappingKeepsOnlyWhatThePinHoldsUntilTheUnmap)
{
    setup();
    grant(5, kGranted);
    const Mfn f = lay.mfn(kGranted);
    const auto op = map_grant(5, peer_va(kAt));
    ASSERT_EQ(op.status, GNTST_okay);
    const TeardownResult r = relinquish_domain(hv(), *d);
    EXPECT_EQ(r.kept, 2u);   // the mapped frame and the one table frame
    EXPECT_EQ(hv().domain(kDom), d);
    EXPECT_EQ(frame(f).count, 1u);   // the mapping's references only
    EXPECT_EQ(frame(f).type_count(), 1u);
    EXPECT_EQ(flags(5), GTF_permit_access | GTF_reading | GTF_writing);
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(unmap_grant(op.handle, peer_va(kAt)), GNTST_okay);
    EXPECT_EQ(frame(f).count, 0u);
    EXPECT_EQ(frame(f).type_count(), 0u);
    EXPECT_EQ(frame(f).owner.load(), kOwnerFree);
    EXPECT_EQ(frame(frames1[0]).owner.load(), kOwnerFree);   // the table frame
    EXPECT_EQ(hv().domain(kDom), nullptr);
    EXPECT_TRUE(invariants_hold(m));
}

// The same when the last pin is the mapper's own teardown's.
TEST_F(GrantMapTest, BothDomainsTornDownUnderAMappingGiveEverythingBack)
{
    setup();
    grant(5, kGranted);
    grant(6, kGranted + 1, GTF_permit_access | GTF_readonly);
    ASSERT_EQ(map_grant(5, peer_va(kAt)).status, GNTST_okay);
    ASSERT_EQ(map_grant(6, peer_va(kAt + 1), GNTMAP_host_map | GNTMAP_readonly).status, GNTST_okay);
    EXPECT_EQ(relinquish_domain(hv(), *d).kept, 3u);   // two mapped frames and the table frame
    EXPECT_TRUE(invariants_hold(m));
    EXPECT_EQ(relinquish_domain(hv(), *d2).kept, 0u);
    EXPECT_EQ(hv().domain(kDom), nullptr);
    EXPECT_EQ(hv().domain(kPeer), nullptr);
    for (const Mfn f : {lay.mfn(kGranted), lay.mfn(kGranted + 1), frames1[0]})
        EXPECT_EQ(frame(f).owner.load(), kOwnerFree) << f.v;
    EXPECT_TRUE(invariants_hold(m));
}

} // namespace
} // namespace pvmmu::test

namespace pvmmu::test {
namespace {

// The invariant checker sees each way a grant's accounting can break.
class GrantInvariantsDetect : public GrantTest {
protected:
    gnttab_map_grant_ref_t mapped()
    {
        setup();
        grant(5, 500);
        const auto op = map_grant(5, peer_va(40));
        EXPECT_EQ(op.status, GNTST_okay);
        EXPECT_TRUE(invariants_hold(m));
        return op;
    }
};

TEST_F(GrantInvariantsDetect, APinWithoutItsMapping)
{
    mapped();
    ++gt1->active(5).rw;
    EXPECT_TRUE(invariant_broken(m, "grant pins differ from the mappings that hold them"));
    --gt1->active(5).rw;
}

TEST_F(GrantInvariantsDetect, AnEntryPinnedBehindTheTablesCount)
{
    mapped();
    gt1->active(6) = ActiveGrant{1, 0, kPeer, lay.mfn(501)};
    EXPECT_TRUE(invariant_broken(m, "grant table's count of pinned entries differs from its entries"));
    gt1->active(6) = ActiveGrant{};
}

TEST_F(GrantInvariantsDetect, TheGrantersFlagsClearedUnderALiveMapping)
{
    mapped();
    std::atomic_ref<uint16_t>(entry(5).flags).store(GTF_permit_access | GTF_reading);
    EXPECT_TRUE(invariant_broken(m, "grant's GTF_writing differs from its writable pins"));
    std::atomic_ref<uint16_t>(entry(5).flags).store(GTF_permit_access);
    EXPECT_TRUE(invariant_broken(m, "pinned grant without GTF_reading"));
}

TEST_F(GrantInvariantsDetect, AForeignEntryNoMappingExplains)
{
    const auto op = mapped();
    gt2->map(op.handle).index ^= 1;
    EXPECT_TRUE(invariant_broken(m, "foreign frame mapped without privilege"));
    gt2->map(op.handle).index ^= 1;
    gt2->map(op.handle).state = MapTrack::State::Unmapping;
    EXPECT_TRUE(invariant_broken(m, "maptrack entry left mid-operation"));
    gt2->map(op.handle).state = MapTrack::State::Live;
}

} // namespace
} // namespace pvmmu::test
