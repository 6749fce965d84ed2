// Per-domain policy hooks (docs/design.md §4, like Xen's XSM): each command can be denied;
// a denied request is -EPERM and changes nothing, and only that command is denied.
#include <functional>

#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

using PolicyTest = CoreTest;

TEST_F(PolicyTest, EveryPermissionIsAllowedByDefaultExceptMapForeign)
{
    Policy p;
    for (unsigned i = 0; i < unsigned(Perm::Count); ++i)
        EXPECT_EQ(p.allows(Perm(i)), Perm(i) != Perm::MapForeign) << i;
}

TEST_F(PolicyTest, DeniedNormalUpdateIsEpermAfterTheEarlierRequests)
{
    d->policy.deny(Perm::MmuNormal);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, map(600, kDataFlags | NX)),
                          req(601, MMU_NORMAL_PT_UPDATE, map(601, kDataFlags | NX))},
                         &done),
              -XEN_EPERM);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(PolicyTest, DeniedNormalUpdateDeniesNoTranslateToo)
{
    d->policy.deny(Perm::MmuNormal);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(600, MMU_PT_UPDATE_NO_TRANSLATE, map(600, kDataFlags | NX))}, &done), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PolicyTest, DeniedMachphysUpdateIsEperm)
{
    d->policy.deny(Perm::MmuMachphys);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({mmu_update_t{maddr_of(lay.mfn(600)).v | MMU_MACHPHYS_UPDATE, 5}}, &done),
              -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PolicyTest, DeniedAtomicUpdateIsEpermWhileNormalStillWorks)
{
    d->policy.deny(Perm::MmuAtomic);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX)),
                          req(601, MMU_ATOMIC_PT_UPDATE, map(601, kDataFlags | NX))},
                         &done),
              -XEN_EPERM);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(PolicyTest, DeniedFlagRangeIsEpermEvenWithCountZero)
{
    d->policy.deny(Perm::MmuFlagRange);
    for (uint32_t count : {0u, 4u}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({mmu_update_t{ptr(l1_of(600), idx(600), MMU_FLAG_RANGE_UPDATE),
                                           abi::encode_flag_range(NX, NX, count)}},
                             &done),
                  -XEN_EPERM);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(PolicyTest, DeniedPinIsEpermForPinAndUnpin)
{
    d->policy.deny(Perm::Pin);
    for (mmuext_op_t op : {op_mfn(MMUEXT_PIN_L1_TABLE, l1_of(0)), op_mfn(MMUEXT_PIN_L2_TABLE, l2()),
                           op_mfn(MMUEXT_PIN_L3_TABLE, l3()), op_mfn(MMUEXT_PIN_L4_TABLE, l4()),
                           op_mfn(MMUEXT_UNPIN_TABLE, l4())}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmuext({op}, &done), -XEN_EPERM) << op.cmd;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(PolicyTest, DeniedBasePtrIsEperm)
{
    d->policy.deny(Perm::BasePtr);
    for (unsigned cmd : {unsigned(MMUEXT_NEW_BASEPTR), unsigned(MMUEXT_NEW_USER_BASEPTR)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmuext({op_mfn(cmd, l4())}, &done), -XEN_EPERM) << cmd;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(PolicyTest, DeniedTlbFlushIsEpermAndFlushesNothing)
{
    d->policy.deny(Perm::TlbFlush);
    const uint64_t mask = 0b11;
    for (unsigned cmd : {unsigned(MMUEXT_TLB_FLUSH_LOCAL), unsigned(MMUEXT_TLB_FLUSH_MULTI),
                         unsigned(MMUEXT_TLB_FLUSH_ALL), unsigned(MMUEXT_INVLPG_LOCAL),
                         unsigned(MMUEXT_INVLPG_MULTI), unsigned(MMUEXT_INVLPG_ALL)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmuext({op_va(cmd, lay.va(600).v, &mask)}, &done), -XEN_EPERM) << cmd;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(PolicyTest, DeniedUpdateVaMappingIsEperm)
{
    d->policy.deny(Perm::UpdateVaMapping);
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(lay.va(600), map(600, kDataFlags | NX), UVMF_INVLPG | UVMF_ALL), -XEN_EPERM);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PolicyTest, DeniedMulticallIsEpermAndRunsNoEntry)
{
    d->policy.deny(Perm::Multicall);
    multicall_entry_t e{};
    e.op = __HYPERVISOR_update_va_mapping;
    e.result = 77;
    e.args[0] = lay.va(600).v;
    e.args[1] = map(600, kDataFlags | NX);
    Snapshot before(m);
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_multicall, uint64_t(&e), 1), -XEN_EPERM);
    EXPECT_EQ(e.result, 77u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PolicyTest, DeniedCommandInsideAMulticallIsEpermInItsEntry)
{
    d->policy.deny(Perm::UpdateVaMapping);
    multicall_entry_t e{};
    e.op = __HYPERVISOR_update_va_mapping;
    e.args[0] = lay.va(600).v;
    e.args[1] = map(600, kDataFlags | NX);
    Snapshot before(m);
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_multicall, uint64_t(&e), 1), 0);
    EXPECT_EQ(long(e.result), -XEN_EPERM);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PolicyTest, MapForeignIsAPrivilegeThatCanBeGrantedAndWithdrawn)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    const mmu_update_t r = req(600, MMU_NORMAL_PT_UPDATE, map(lay2.mfn(20), P | US | A));
    unsigned done = 99;
    Snapshot before(m);
    EXPECT_EQ(mmu_update({r}, &done, 2), -XEN_EPERM);   // not granted by default
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));

    d->policy.allow(Perm::MapForeign);
    d->policy.deny(Perm::MapForeign);
    EXPECT_EQ(mmu_update({r}, &done, 2), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));

    d->policy.allow(Perm::MapForeign);
    EXPECT_EQ(mmu_update({r}, &done, 2), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(lay2.mfn(20), P | US | A))
                         .count(lay2.mfn(20), +1)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1),
                     m));
}

TEST_F(PolicyTest, PolicyIsPerDomain)
{
    DomainLayout lay2;
    Domain* d2 = m.create_domain(2, 64, 1, lay2);
    ASSERT_NE(d2, nullptr);
    d2->policy.deny(Perm::MmuAtomic);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, map(600, kDataFlags | NX))}, &done), 0);
    EXPECT_EQ(done, 1u);
    mmu_update_t r{ptr(lay2.mfn(3), 40, MMU_ATOMIC_PT_UPDATE), Pte::make(lay2.mfn(40), kDataFlags | NX).v};
    EXPECT_EQ(m.call(d2->vcpus[0], __HYPERVISOR_mmu_update, uint64_t(&r), 1, uint64_t(&done), DOMID_SELF),
              -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

// The ABI's deny bits (abi.h PVMMU_DENY_*: the `deny=` boot word, PVMMUOP_deny).
TEST_F(PolicyTest, DenyBitsOutsideTheAbiAreRefusedAndDenyNothing)
{
    Policy p;
    EXPECT_FALSE(p.deny_abi(PVMMU_DENY_PIN | (PVMMU_DENY_ALL + 1)));
    EXPECT_FALSE(p.deny_abi(1u << 31));
    EXPECT_FALSE(p.deny_abi(PVMMU_DENY_PIN | (uint64_t(1) << 32)));   // a 64-bit register's high half
    for (unsigned i = 0; i < unsigned(Perm::Count); ++i)
        EXPECT_EQ(p.allows(Perm(i)), Perm(i) != Perm::MapForeign) << i;
}

TEST_F(PolicyTest, EachDenyBitDeniesExactlyItsCommand)
{
    const struct {
        uint32_t bit;
        Perm perm;
    } kBits[] = {
        {PVMMU_DENY_MMU_NORMAL, Perm::MmuNormal}, {PVMMU_DENY_MMU_ATOMIC, Perm::MmuAtomic},
        {PVMMU_DENY_FLAG_RANGE, Perm::MmuFlagRange}, {PVMMU_DENY_PIN, Perm::Pin},
        {PVMMU_DENY_TLB_FLUSH, Perm::TlbFlush}, {PVMMU_DENY_UPDATE_VA_MAPPING, Perm::UpdateVaMapping},
        {PVMMU_DENY_MULTICALL, Perm::Multicall},
    };
    uint32_t all = 0;
    for (const auto& b : kBits) {
        Policy p;
        ASSERT_TRUE(p.deny_abi(b.bit));
        for (unsigned i = 0; i < unsigned(Perm::Count); ++i)
            EXPECT_EQ(p.allows(Perm(i)), Perm(i) != b.perm && Perm(i) != Perm::MapForeign) << b.bit << " " << i;
        all |= b.bit;
    }
    EXPECT_EQ(all, PVMMU_DENY_ALL);
}

TEST_F(PolicyTest, DenyBitsOnlyEverAdd)
{
    Policy p;
    ASSERT_TRUE(p.deny_abi(PVMMU_DENY_MMU_ATOMIC));
    ASSERT_TRUE(p.deny_abi(0));
    ASSERT_TRUE(p.deny_abi(PVMMU_DENY_PIN));
    EXPECT_FALSE(p.allows(Perm::MmuAtomic));
    EXPECT_FALSE(p.allows(Perm::Pin));
}


// --- a writable raise rechecks the owner -------------------
//
// Under MapForeign the domain maps, read-only, a frame of domain 2 (gpfn 600's
// entry, foreigndom 2) and an I/O frame (gpfn 601's, DOMID_IO). Raising RW on
// those entries keeps the frame, so no path took the entry's references again
// and none looked at the owner: with foreigndom = SELF, or after the privilege
// went, each of the three raise paths made them writable.
class ForeignRaiseTest : public CoreTest {
protected:
    static constexpr uint64_t kForeign = 600, kIo = 601;
    static constexpr Mfn kIoFrame{16};

    void SetUp() override
    {
        CoreTest::SetUp();
        ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
        d->policy.allow(Perm::MapForeign);
        unsigned done = 0;
        ASSERT_EQ(mmu_update({req(kForeign, MMU_NORMAL_PT_UPDATE, map(foreign(), P | US | A))}, &done, 2), 0);
        ASSERT_EQ(mmu_update({req(kIo, MMU_NORMAL_PT_UPDATE, map(kIoFrame, P | US | A))}, &done, DOMID_IO), 0);
    }

    Mfn foreign() const { return lay2.mfn(20); }
    Mfn frame_of(uint64_t g) const { return g == kForeign ? foreign() : kIoFrame; }
    uint64_t raised(uint64_t g) const { return map(frame_of(g), P | RW | US | A); }

    // The raise of gpfn g's entry through each path; foreigndom for mmu_update.
    long raise_cmd(uint64_t g, unsigned cmd, uint64_t fd)
    {
        unsigned done = 99;
        const long rc = mmu_update({req(g, cmd, raised(g))}, &done, fd);
        EXPECT_EQ(done, rc == 0 ? 1u : 0u);
        return rc;
    }
    long raise_range(uint64_t g, uint64_t fd)
    {
        unsigned done = 99;
        const long rc = mmu_update({req(g, MMU_FLAG_RANGE_UPDATE, abi::encode_flag_range(RW, RW, 1))}, &done, fd);
        EXPECT_EQ(done, rc == 0 ? 1u : 0u);
        return rc;
    }
    long raise_va(uint64_t g) { return update_va_mapping(lay.va(g), raised(g), UVMF_NONE); }

    // Every path's raise of g's entry, refused with -EPERM and no change.
    void expect_every_raise_refused(uint64_t g, uint64_t fd)
    {
        const std::pair<const char*, std::function<long()>> paths[] = {
            {"cmd 0 (l1_run)", [&] { return raise_cmd(g, MMU_NORMAL_PT_UPDATE, fd); }},
            {"cmd 2 (l1_run)", [&] { return raise_cmd(g, MMU_ATOMIC_PT_UPDATE, fd); }},
            {"cmd 4 (flag_range)", [&] { return raise_range(g, fd); }},
            {"update_va_mapping (mod_entry_refs)", [&] { return raise_va(g); }},
        };
        for (const auto& [name, raise] : paths) {
            Snapshot before(m);
            const long rc = raise();
            EXPECT_EQ(rc, -XEN_EPERM) << name << ", gpfn " << g << ", foreigndom " << fd;
            EXPECT_TRUE(unchanged(before, m)) << name << ", gpfn " << g << ", foreigndom " << fd;
            if (rc == 0) {   // read-only again, so the next path starts where this one did
                unsigned done = 0;
                EXPECT_EQ(mmu_update({req(g, MMU_NORMAL_PT_UPDATE, map(frame_of(g), P | US | A))}, &done), 0);
            }
        }
    }

    DomainLayout lay2;
};

TEST_F(ForeignRaiseTest, RaiseWithoutNamingTheOwnerIsEperm)
{
    expect_every_raise_refused(kForeign, DOMID_SELF);
    expect_every_raise_refused(kIo, DOMID_SELF);
    // Naming another foreign domain than the owner is no better.
    expect_every_raise_refused(kIo, 2);
    expect_every_raise_refused(kForeign, DOMID_IO);
}

TEST_F(ForeignRaiseTest, RaiseAfterThePrivilegeWentIsEperm)
{
    d->policy.deny(Perm::MapForeign);
    expect_every_raise_refused(kForeign, DOMID_SELF);
    expect_every_raise_refused(kIo, DOMID_SELF);
}

// What the privilege does allow: a raise that names the owner, as a writable
// mapping made in one step would (foreign frames are typed writable as usual).
TEST_F(ForeignRaiseTest, RaiseNamingTheOwnerUnderThePrivilegeIsAllowed)
{
    for (uint64_t g : {kForeign, kIo}) {
        const uint64_t fd = g == kForeign ? 2 : DOMID_IO;
        // The I/O frame takes the writable type on its first raise: done once
        // here, so each path below changes only the count.
        ASSERT_EQ(raise_cmd(g, MMU_NORMAL_PT_UPDATE, fd), 0);
        unsigned done = 0;
        ASSERT_EQ(mmu_update({req(g, MMU_NORMAL_PT_UPDATE, map(frame_of(g), P | US | A))}, &done, fd), 0);
        for (int path = 0; path < 3; ++path) {
            Snapshot before(m);
            const long rc = path == 0   ? raise_cmd(g, MMU_NORMAL_PT_UPDATE, fd)
                            : path == 1 ? raise_cmd(g, MMU_ATOMIC_PT_UPDATE, fd)
                                        : raise_range(g, fd);
            EXPECT_EQ(rc, 0) << "path " << path << ", gpfn " << g;
            EXPECT_TRUE(only(Changes(before).word(l1_of(g), idx(g), raised(g)).type_count(frame_of(g), +1), m))
                << "path " << path << ", gpfn " << g;
            // Back to read-only for the next path.
            ASSERT_EQ(mmu_update({req(g, MMU_NORMAL_PT_UPDATE, map(frame_of(g), P | US | A))}, &done, fd), 0);
            ASSERT_TRUE(unchanged(before, m));
        }
    }
}

// The domain's own frames are raised as before, whatever foreigndom names.
TEST_F(ForeignRaiseTest, OwnFramesRaiseAsBefore)
{
    make_read_only(602);
    unsigned done = 0;
    Snapshot before(m);
    EXPECT_EQ(mmu_update({req(602, MMU_ATOMIC_PT_UPDATE, map(602, kDataFlags))}, &done, 2), 0);
    EXPECT_TRUE(only(Changes(before).word(l1_of(602), idx(602), map(602, kDataFlags)).type_count(lay.mfn(602), +1), m));
}

} // namespace
} // namespace pvmmu::test
