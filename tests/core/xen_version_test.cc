// HYPERVISOR_xen_version (docs/design.md §3 "Feature discovery"): the interface version, the
// page size, the extra version string and the feature bits, which follow the
// domain's policy so that a guest never detects a command it may not use.
#include <cstring>

#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class XenVersionTest : public CoreTest {
protected:
    long version(uint64_t cmd, void* arg)
    {
        return m.call(v0(), __HYPERVISOR_xen_version, cmd, uint64_t(arg));
    }
    uint32_t features(uint32_t submap_idx = 0)
    {
        xen_feature_info_t fi{submap_idx, 0xffffffffu};
        EXPECT_EQ(version(XENVER_get_features, &fi), 0);
        EXPECT_EQ(fi.submap_idx, submap_idx);
        return fi.submap;
    }
};

TEST_F(XenVersionTest, UnknownSubcommandIsEnosys)
{
    Snapshot before(m);
    for (uint64_t cmd : {uint64_t(XENVER_build_id + 1), uint64_t(1000)})
        EXPECT_EQ(version(cmd, nullptr), -XEN_ENOSYS) << cmd;
    EXPECT_TRUE(unchanged(before, m));
}

// The sub-ops Xen answers every guest, with Xen's types.
TEST_F(XenVersionTest, StringsAndParametersAsXenGivesThem)
{
    xen_compile_info_t ci;
    std::memset(&ci, 0x55, sizeof(ci));
    ASSERT_EQ(version(XENVER_compile_info, &ci), 0);
    EXPECT_EQ(std::strncmp(ci.compiler, "g++ ", 4), 0);
    EXPECT_STREQ(ci.compile_by, "pvmmu");
    EXPECT_EQ(ci.compile_date[sizeof(ci.compile_date) - 1], 0);
    xen_capabilities_info_t caps;
    ASSERT_EQ(version(XENVER_capabilities, caps), 0);
    EXPECT_STREQ(caps, "xen-3.0-x86_64");
    xen_changeset_info_t cs;
    ASSERT_EQ(version(XENVER_changeset, cs), 0);
    EXPECT_STREQ(cs, "pvmmu");
    xen_platform_parameters_t pp{};
    ASSERT_EQ(version(XENVER_platform_parameters, &pp), 0);
    EXPECT_EQ(pp.virt_start, 0xffff800000000000ull);
    xen_domain_handle_t handle;
    std::memset(handle, 0x55, sizeof(handle));
    ASSERT_EQ(version(XENVER_guest_handle, handle), 0);
    for (uint8_t b : handle) EXPECT_EQ(b, 0);
}

TEST_F(XenVersionTest, CommandLineAndBuildIdArePrivilegedAndChangeNothing)
{
    Snapshot before(m);
    char line[1024];
    EXPECT_EQ(version(XENVER_commandline, line), -XEN_EPERM);
    EXPECT_EQ(version(XENVER_build_id, line), -XEN_EPERM);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(XenVersionTest, UnknownHypercallNumberIsEnosys)
{
    Snapshot before(m);
    for (uint64_t op : {uint64_t(__HYPERVISOR_xenoprof_op), uint64_t(63), uint64_t(64), ~uint64_t(0)})
        EXPECT_EQ(m.call(v0(), op, 0, 0), -XEN_ENOSYS) << op;
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(XenVersionTest, BadArgumentPointersAreEfault)
{
    Snapshot before(m);
    for (uint64_t cmd : {XENVER_extraversion, XENVER_compile_info, XENVER_capabilities, XENVER_changeset,
                         XENVER_platform_parameters, XENVER_guest_handle, XENVER_get_features})
        EXPECT_EQ(version(cmd, reinterpret_cast<void*>(kBadGuestPtr)), -XEN_EFAULT) << cmd;
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(XenVersionTest, VersionIsXen4_17)
{
    EXPECT_EQ(version(XENVER_version, nullptr), (4l << 16) | 17);
}

TEST_F(XenVersionTest, PagesizeIs4KiB)
{
    EXPECT_EQ(version(XENVER_pagesize, nullptr), 4096);
}

TEST_F(XenVersionTest, ExtraversionIsANulTerminatedString)
{
    xen_extraversion_t s;
    std::memset(s, 'x', sizeof(s));
    EXPECT_EQ(version(XENVER_extraversion, s), 0);
    ASSERT_NE(std::memchr(s, 0, sizeof(s)), nullptr);
    EXPECT_STREQ(s, "-pvmmu");
}

// What Xen 4.17 reports to a PV domU that is true of pvmmu, and pvmmu's own bit.
constexpr uint32_t kAlways = 1u << XENFEAT_gnttab_map_avail_bits | 1u << XENFEAT_direct_mapped;

TEST_F(XenVersionTest, FeaturesReportPreserveAdAndFlagRange)
{
    const uint32_t f = features();
    EXPECT_EQ(f, kAlways | (1u << XENFEAT_mmu_pt_update_preserve_ad) | (1u << PVMMU_FEAT_flag_range_update));
    EXPECT_EQ(XENFEAT_mmu_pt_update_preserve_ad, 5);
    EXPECT_EQ(PVMMU_FEAT_flag_range_update, 31);
}

// Linux 6.1 panics at boot without gnttab_map_avail_bits; auto_translated_physmap
// and supervisor_mode_kernel must stay clear for a PV guest.
TEST_F(XenVersionTest, FeaturesAsXenGivesAPvDomU)
{
    const uint32_t f = features();
    EXPECT_TRUE(f & (1u << XENFEAT_gnttab_map_avail_bits));
    EXPECT_TRUE(f & (1u << XENFEAT_direct_mapped));
    EXPECT_FALSE(f & (1u << XENFEAT_not_direct_mapped));
    EXPECT_FALSE(f & (1u << XENFEAT_auto_translated_physmap));
    EXPECT_FALSE(f & (1u << XENFEAT_supervisor_mode_kernel));
    EXPECT_FALSE(f & (1u << XENFEAT_writable_page_tables));
    EXPECT_FALSE(f & (1u << XENFEAT_dom0));
}

// Xen has one submap: any other index is -EINVAL, the structure not written.
TEST_F(XenVersionTest, FeatureSubmapsOtherThanZeroAreEinval)
{
    for (uint32_t idx : {1u, 7u, 0xffffffffu}) {
        xen_feature_info_t fi{idx, 0x1234};
        EXPECT_EQ(version(XENVER_get_features, &fi), -XEN_EINVAL);
        EXPECT_EQ(fi.submap, 0x1234u);
    }
}

TEST_F(XenVersionTest, FeatureBitsDisappearWhenPolicyDeniesTheCommand)
{
    d->policy.deny(Perm::MmuFlagRange);
    EXPECT_EQ(features(), kAlways | 1u << XENFEAT_mmu_pt_update_preserve_ad);
    d->policy.deny(Perm::MmuAtomic);
    EXPECT_EQ(features(), kAlways);
    d->policy.allow(Perm::MmuFlagRange);
    EXPECT_EQ(features(), kAlways | 1u << PVMMU_FEAT_flag_range_update);
}

TEST_F(XenVersionTest, FeaturesArePerDomain)
{
    DomainLayout lay2;
    Domain* d2 = m.create_domain(2, 64, 1, lay2);
    ASSERT_NE(d2, nullptr);
    d2->policy.deny(Perm::MmuAtomic);
    xen_feature_info_t fi{0, 0};
    EXPECT_EQ(m.call(d2->vcpus[0], __HYPERVISOR_xen_version, XENVER_get_features, uint64_t(&fi)), 0);
    EXPECT_EQ(fi.submap, kAlways | 1u << PVMMU_FEAT_flag_range_update);
    EXPECT_EQ(features(), kAlways | (1u << XENFEAT_mmu_pt_update_preserve_ad) | (1u << PVMMU_FEAT_flag_range_update));
}

} // namespace
} // namespace pvmmu::test
