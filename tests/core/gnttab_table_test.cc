// The grant table's own sub-ops (setup_table, query_size, set_version,
// get_version, get_status_frames, swap_grant_ref), GNTTABOP_copy, and the
// sub-ops answered -ENOSYS (core/grant_table.h; docs/abi.md "Grant tables"):
// Xen 4.17's answers with v2 disabled, and no side effect on any refusal.
#include <cstring>

#include "support/grant_fixture.h"

namespace pvmmu::test {
namespace {

using GrantTableTest = GrantTest;

TEST_F(GrantTableTest, SetupTableTypesItsFramesWritableZeroesThemAndListsThem)
{
    std::memset(hv().mem().frame(frames1[1]), 0xab, kPageSize);
    const uint32_t count = frame(frames1[0]).count;
    xen_pfn_t list[2] = {};
    gnttab_setup_table_t op{};
    op.dom = DOMID_SELF;
    op.nr_frames = 2;
    op.frame_list.p = list;
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_okay);
    EXPECT_EQ(list[0], frames1[0].v);
    EXPECT_EQ(list[1], frames1[1].v);
    EXPECT_EQ(frame(frames1[0]).count, count + 1);
    EXPECT_EQ(gt1->nr_frames(), 2u);
    EXPECT_EQ(*static_cast<uint8_t*>(hv().mem().frame(frames1[1])), 0u);
    EXPECT_TRUE(invariants_hold(m));

    gnttab_query_size_t q{};
    q.dom = DOMID_SELF;
    ASSERT_EQ(gnttab(GNTTABOP_query_size, &q), 0);
    EXPECT_EQ(q.status, GNTST_okay);
    EXPECT_EQ(q.nr_frames, 2u);
    EXPECT_EQ(q.max_nr_frames, 4u);

    // A smaller request lists the first frames and shrinks nothing.
    op.nr_frames = 1;
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_okay);
    EXPECT_EQ(gt1->nr_frames(), 2u);
}

TEST_F(GrantTableTest, SetupTableRefusalsChangeNothing)
{
    xen_pfn_t list[8] = {};
    gnttab_setup_table_t op{};
    op.frame_list.p = list;
    Snapshot before(m);
    op.dom = DOMID_SELF;
    op.nr_frames = 5;   // over max_grant_frames
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_general_error);
    op.nr_frames = 1;
    op.dom = kPeer;
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_permission_denied);
    op.dom = 9;
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_bad_domain);
    EXPECT_EQ(gnttab(GNTTABOP_setup_table, &op, 2), -XEN_EINVAL);
    EXPECT_EQ(gnttab(GNTTABOP_setup_table, reinterpret_cast<void*>(kBadGuestPtr)), -XEN_EFAULT);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(gt1->nr_frames(), 0u);
}

TEST_F(GrantTableTest, ATableFrameThatIsAPageTableFailsTheGrowthWhole)
{
    frames1[1] = lay.mfn(lay.l1_gpfn(0));   // the platform gave a frame the guest made a table
    gt1 = std::make_unique<GrantTable>(kDom, GrantLimits{4, 1},
                                       GrantStorage{frames1, 4, active1.data(), mt1.data(), kHandles});
    d->grants = gt1.get();
    xen_pfn_t list[2] = {};
    gnttab_setup_table_t op{};
    op.dom = DOMID_SELF;
    op.nr_frames = 2;
    op.frame_list.p = list;
    Snapshot before(m);
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_general_error);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(gt1->nr_frames(), 0u);
}

TEST_F(GrantTableTest, UnwritableFrameListIsBadVirtAddr)
{
    gnttab_setup_table_t op{};
    op.dom = DOMID_SELF;
    op.nr_frames = 1;
    op.frame_list.p = reinterpret_cast<xen_pfn_t*>(kBadGuestPtr);
    ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
    EXPECT_EQ(op.status, GNTST_bad_virt_addr);
}

TEST_F(GrantTableTest, QuerySizeOfAnotherDomainIsRefused)
{
    gnttab_query_size_t q{};
    q.dom = kPeer;
    ASSERT_EQ(gnttab(GNTTABOP_query_size, &q), 0);
    EXPECT_EQ(q.status, GNTST_permission_denied);
    q.dom = 9;
    ASSERT_EQ(gnttab(GNTTABOP_query_size, &q), 0);
    EXPECT_EQ(q.status, GNTST_bad_domain);
    EXPECT_EQ(gnttab(GNTTABOP_query_size, &q, 0), -XEN_EINVAL);
}

TEST_F(GrantTableTest, VersionOneOnlyTwoIsEnosysAsXenWithV2Disabled)
{
    gnttab_set_version_t s{1};
    EXPECT_EQ(gnttab(GNTTABOP_set_version, &s), 0);
    EXPECT_EQ(s.version, 1u);
    s.version = 2;
    EXPECT_EQ(gnttab(GNTTABOP_set_version, &s), -XEN_ENOSYS);
    EXPECT_EQ(s.version, 1u);
    s.version = 3;
    EXPECT_EQ(gnttab(GNTTABOP_set_version, &s), -XEN_EINVAL);
    EXPECT_EQ(s.version, 1u);

    gnttab_get_version_t g{};
    g.dom = DOMID_SELF;
    EXPECT_EQ(gnttab(GNTTABOP_get_version, &g), 0);
    EXPECT_EQ(g.version, 1u);
    g.dom = kPeer;
    EXPECT_EQ(gnttab(GNTTABOP_get_version, &g), -XEN_EPERM);
    g.dom = 9;
    EXPECT_EQ(gnttab(GNTTABOP_get_version, &g), -XEN_ESRCH);
}

TEST_F(GrantTableTest, StatusFramesOfAV1TableAreNone)
{
    uint64_t list[1] = {};
    gnttab_get_status_frames_t op{};
    op.dom = DOMID_SELF;
    op.frame_list.p = list;
    ASSERT_EQ(gnttab(GNTTABOP_get_status_frames, &op), 0);
    EXPECT_EQ(op.status, GNTST_okay);
    op.nr_frames = 1;
    ASSERT_EQ(gnttab(GNTTABOP_get_status_frames, &op), 0);
    EXPECT_EQ(op.status, GNTST_general_error);
    op.dom = 9;
    ASSERT_EQ(gnttab(GNTTABOP_get_status_frames, &op), 0);
    EXPECT_EQ(op.status, GNTST_bad_domain);
}

TEST_F(GrantTableTest, UnofferedSubOpsAreEnosysAndBadCommandWordsEinval)
{
    gnttab_transfer_t t{};
    Snapshot before(m);
    for (unsigned cmd : {unsigned(GNTTABOP_transfer), unsigned(GNTTABOP_dump_table), unsigned(GNTTABOP_cache_flush), 13u, 4095u})
        EXPECT_EQ(gnttab(cmd, &t), -XEN_ENOSYS) << cmd;
    EXPECT_EQ(gnttab(GNTTABOP_query_size | (1u << 12), &t), -XEN_EINVAL);
    EXPECT_EQ(gnttab(GNTTABOP_map_grant_ref, &t, 0x80000000u), -XEN_EINVAL);
    d->grants = nullptr;
    EXPECT_EQ(gnttab(GNTTABOP_query_size, &t), -XEN_ENOSYS);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(GrantTableTest, SwapExchangesIdleEntriesAndRefusesPinnedOnes)
{
    setup();
    grant(1, 500);
    grant(2, 501, GTF_permit_access | GTF_readonly);
    gnttab_swap_grant_ref_t s{1, 2, 99};
    ASSERT_EQ(gnttab(GNTTABOP_swap_grant_ref, &s), 0);
    EXPECT_EQ(s.status, GNTST_okay);
    EXPECT_EQ(entry(1).frame, lay.mfn(501).v);
    EXPECT_EQ(flags(2), GTF_permit_access);
    ASSERT_EQ(map_grant(2, peer_va(40)).status, GNTST_okay);
    Snapshot before(m);
    s = {1, 2, 99};
    ASSERT_EQ(gnttab(GNTTABOP_swap_grant_ref, &s), 0);
    EXPECT_EQ(s.status, GNTST_eagain);
    s = {1, gnt::kEntriesPerFrame, 99};
    ASSERT_EQ(gnttab(GNTTABOP_swap_grant_ref, &s), 0);
    EXPECT_EQ(s.status, GNTST_bad_gntref);
    EXPECT_TRUE(unchanged(before, m));
}

// Reported with a grant table and without one (whose GNTTABOP is -ENOSYS, so
// no mapping exists the bit could be wrong about): Linux 6.1 panics at boot
// without it (docs/abi.md §8).
TEST_F(GrantTableTest, GuestAvailableBitsAreReportedWithAndWithoutAGrantTable)
{
    auto features = [&] {
        xen_feature_info_t fi{0, 0};
        EXPECT_EQ(m.call(v0(), __HYPERVISOR_xen_version, XENVER_get_features, uint64_t(&fi)), 0);
        return fi.submap;
    };
    EXPECT_TRUE((features() >> XENFEAT_gnttab_map_avail_bits) & 1);
    d->grants = nullptr;
    EXPECT_TRUE((features() >> XENFEAT_gnttab_map_avail_bits) & 1);
}

// --- copy ------------------------------------------------------------------------

gnttab_copy_t copy_op(uint32_t src, DomId sdom, uint16_t soff, uint32_t dst, DomId ddom, uint16_t doff,
                      uint16_t len, uint16_t fl)
{
    gnttab_copy_t c{};
    if (fl & GNTCOPY_source_gref) c.source.u.ref = src;
    else c.source.u.gmfn = src;
    if (fl & GNTCOPY_dest_gref) c.dest.u.ref = dst;
    else c.dest.u.gmfn = dst;
    c.source.domid = sdom;
    c.source.offset = soff;
    c.dest.domid = ddom;
    c.dest.offset = doff;
    c.len = len;
    c.flags = fl;
    c.status = 99;
    return c;
}

TEST_F(GrantTableTest, CopyMovesBytesBothWaysAndLeavesTheGrantsFlagsAsTheyWere)
{
    setup();
    grant(3, 500);                                          // domain 2 may read and write it
    uint8_t* granted = static_cast<uint8_t*>(hv().mem().frame(lay.mfn(500)));
    uint8_t* own = static_cast<uint8_t*>(hv().mem().frame(lay2.mfn(41)));
    for (unsigned i = 0; i < 64; ++i) granted[100 + i] = uint8_t(i + 1);
    // From the grant into domain 2's own frame...
    auto c = copy_op(3, kDom, 100, uint32_t(lay2.mfn(41).v), DOMID_SELF, 8, 64, GNTCOPY_source_gref);
    ASSERT_EQ(gnttab(GNTTABOP_copy, &c, 1, &p0()), 0);
    EXPECT_EQ(c.status, GNTST_okay);
    EXPECT_EQ(std::memcmp(own + 8, granted + 100, 64), 0);
    // ...and back, to the grant's last bytes.
    own[0] = 0x5a;
    c = copy_op(uint32_t(lay2.mfn(41).v), DOMID_SELF, 0, 3, kDom, 4095, 1, GNTCOPY_dest_gref);
    ASSERT_EQ(gnttab(GNTTABOP_copy, &c, 1, &p0()), 0);
    EXPECT_EQ(c.status, GNTST_okay);
    EXPECT_EQ(granted[4095], 0x5a);
    EXPECT_EQ(flags(3), GTF_permit_access);
    EXPECT_FALSE(gt1->active(3).pinned());
    EXPECT_TRUE(invariants_hold(m));
}

TEST_F(GrantTableTest, CopyAbuseIsRefusedWithXensStatusAndWritesNothing)
{
    setup();
    grant(3, 500, GTF_permit_access | GTF_readonly);
    grant(4, lay.l1_gpfn(0));            // a page table of domain 1
    grant(5, 501);
    const uint32_t own = uint32_t(lay2.mfn(41).v);
    Snapshot before(m);
    const struct {
        gnttab_copy_t op;
        int16_t status;
    } cases[] = {
        {copy_op(5, kDom, 4000, own, DOMID_SELF, 0, 97, GNTCOPY_source_gref), GNTST_bad_copy_arg},   // past the end
        {copy_op(own, DOMID_SELF, 0, 5, kDom, 4095, 2, GNTCOPY_dest_gref), GNTST_bad_copy_arg},
        {copy_op(own, DOMID_SELF, 0, 3, kDom, 0, 8, GNTCOPY_dest_gref), GNTST_general_error},   // read-only grant
        {copy_op(own, DOMID_SELF, 0, 4, kDom, 0, 8, GNTCOPY_dest_gref), GNTST_general_error},   // a page table
        {copy_op(uint32_t(lay.mfn(500).v), kDom, 0, own, DOMID_SELF, 0, 8, 0), GNTST_permission_denied},
        {copy_op(uint32_t(lay.mfn(500).v), DOMID_SELF, 0, own, DOMID_SELF, 0, 8, 0), GNTST_bad_page},   // not its own
        {copy_op(5, 9, 0, own, DOMID_SELF, 0, 8, GNTCOPY_source_gref), GNTST_bad_domain},
        {copy_op(gnt::kEntriesPerFrame, kDom, 0, own, DOMID_SELF, 0, 8, GNTCOPY_source_gref), GNTST_bad_gntref},
        {copy_op(5, kDom, 0, uint32_t(lay2.mfn(lay2.l1_gpfn(0)).v), DOMID_SELF, 0, 8, GNTCOPY_source_gref),
         GNTST_general_error},   // into its own page table
    };
    for (const auto& k : cases) {
        gnttab_copy_t c = k.op;
        ASSERT_EQ(gnttab(GNTTABOP_copy, &c, 1, &p0()), 0);
        EXPECT_EQ(c.status, k.status) << &k - cases;
    }
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_TRUE(invariants_hold(m));
}

// A budget of 3 requests: 8 maps go in three rounds.
class GrantBatchTest : public GrantTest {
protected:
    GrantBatchTest() : GrantTest(HvConfig{256, 271, 3}) {}
};

TEST_F(GrantBatchTest, ABatchIsPreemptedAndContinuedWhereItStopped)
{
    setup();
    grant(3, 500, GTF_permit_access | GTF_readonly);
    std::vector<gnttab_map_grant_ref_t> ops(kHandles);
    for (uint32_t i = 0; i < kHandles; ++i) {
        ops[i] = gnttab_map_grant_ref_t{};
        ops[i].host_addr = peer_va(40 + i);
        ops[i].flags = GNTMAP_host_map | GNTMAP_readonly;
        ops[i].ref = 3;
        ops[i].dom = kDom;
    }
    unsigned continuations = 0;
    EXPECT_EQ(m.call(p0(), __HYPERVISOR_grant_table_op, GNTTABOP_map_grant_ref, uint64_t(ops.data()), kHandles, 0,
                     0, &continuations),
              0);
    EXPECT_EQ(continuations, 2u);
    for (uint32_t i = 0; i < kHandles; ++i) EXPECT_EQ(ops[i].status, GNTST_okay) << i;
    EXPECT_EQ(gt1->active(3).ro, kHandles);
    EXPECT_TRUE(invariants_hold(m));
}

} // namespace
} // namespace pvmmu::test
