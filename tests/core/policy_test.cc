// Per-domain policy hooks (SPEC §4, like Xen's XSM): each command can be denied;
// a denied request is -EPERM and changes nothing, and only that command is denied.
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

} // namespace
} // namespace pvmmu::test
