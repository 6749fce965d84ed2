// HYPERVISOR_mmuext_op (docs/design.md §3): pinning, base pointers and TLB flushes, batched
// with mmu_update's semantics. Flushes are checked as the DirectPlatform records
// them: CPU mask, kind and address.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class MmuextTest : public CoreTest {
protected:
    long one(const mmuext_op_t& op, unsigned& done, Vcpu* v = nullptr) { return mmuext({op}, &done, v); }

    // Frame g made into a fresh L4 that is a copy of the domain's (links the same L3).
    void prepare_l4_copy(uint64_t g)
    {
        make_read_only(g);
        for (unsigned i = 0; i < kEntriesPerTable; ++i) table(lay.mfn(g))[i] = table(l4())[i];
    }

    static mmuext_op_t set_ldt(uint64_t va, uint32_t ents)
    {
        mmuext_op_t op = op_va(MMUEXT_SET_LDT, va);
        op.arg2.nr_ents = ents;
        return op;
    }
};

constexpr uint64_t kVa = 0x0000'0080'0025'8000ull;   // the physmap address of gpfn 600

// --- invalid operations --------------------------------------------------------

TEST_F(MmuextTest, UnknownCommandsAreEnosysAfterTheEarlierOps)
{
    for (unsigned cmd : {unsigned(MMUEXT_FLUSH_CACHE), unsigned(MMUEXT_CLEAR_PAGE),
                         unsigned(MMUEXT_MARK_SUPER), 99u}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmuext({op_va(MMUEXT_TLB_FLUSH_LOCAL, 0), op_mfn(cmd, lay.mfn(600)),
                          op_va(MMUEXT_TLB_FLUSH_LOCAL, 0)},
                         &done),
                  -XEN_ENOSYS)
            << cmd;
        EXPECT_EQ(done, 1u);
        EXPECT_TRUE(only(Changes(before).flush(cpus({0})), m));
    }
}

// MMUEXT_SET_LDT's checks (<xen/xen.h>): linear_addr page-aligned, nr_ents at
// most 8192, the address canonical; the address of an empty LDT not looked at.
TEST_F(MmuextTest, SetLdtWithAMisalignedAddressTooManyEntriesOrANonCanonicalAddressIsEinval)
{
    for (const mmuext_op_t& op : {set_ldt(kVa + 8, 1), set_ldt(kVa, 8193), set_ldt(0x0000'8000'0000'0000ull, 1)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op, done), -XEN_EINVAL) << op.arg1.linear_addr << " " << op.arg2.nr_ents;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

// Xen's __addr_ok: an LDT in the hypervisor's L4 slots (256-271) is -EINVAL
// in the core, before the platform (the sim's answer would be -EOPNOTSUPP,
// bare metal's -EINVAL); the slots' neighbours pass to the platform.
TEST_F(MmuextTest, SetLdtInTheHypervisorsSlotsIsEinvalOnEveryPlatform)
{
    for (uint64_t va : {0xffff'8000'0000'0000ull, 0xffff'87ff'ffff'f000ull}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(set_ldt(va, 1), done), -XEN_EINVAL) << std::hex << va;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
    unsigned done = 99;
    EXPECT_EQ(one(set_ldt(0xffff'8800'0000'0000ull, 1), done), -XEN_EOPNOTSUPP);   // slot 272
    EXPECT_EQ(one(set_ldt(0x0000'7fff'ffff'f000ull, 1), done), -XEN_EOPNOTSUPP);   // slot 255
}

TEST_F(MmuextTest, SetLdtOfNoEntriesSucceedsWhateverTheAddress)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmuext({set_ldt(kVa + 8, 0), set_ldt(0x0000'8000'0000'0000ull, 0)}, &done), 0);
    EXPECT_EQ(done, 2u);
    EXPECT_TRUE(unchanged(before, m));
}

// The sim has no segmentation (no guest loads a selector there): an LDT of
// entries has nothing to be, and says so; 8192 entries pass the core's check.
TEST_F(MmuextTest, SetLdtOfEntriesIsEopnotsuppWithoutSegmentation)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(set_ldt(kVa, 8192), done), -XEN_EOPNOTSUPP);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, BadOpArrayPointerIsEfault)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmuext_op, kBadGuestPtr, 2, uint64_t(&done), DOMID_SELF),
              -XEN_EFAULT);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, ForeigndomWithoutPrivilegeIsEpermAndNothingRuns)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    std::vector<mmuext_op_t> ops{op_va(MMUEXT_TLB_FLUSH_LOCAL, 0)};
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmuext_op, uint64_t(ops.data()), 1, uint64_t(&done), 2), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, PinOfATableMappingAHypervisorFrameIsEpermWithEveryCountBackWhereItWas)
{
    // Frame 700 no longer mapped writable, filled with one good entry (without US,
    // which validation would add) and one that maps a hypervisor frame.
    make_read_only(700);
    table(lay.mfn(700))[0] = map(800, P | RW | A);
    table(lay.mfn(700))[1] = map(Mfn{2}, P | US | A);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700)), done), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    // The type change flushed the CPUs that might still hold the old writable
    // mapping; nothing else may have changed.
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(MmuextTest, PinOfATableWithADisallowedEntryIsEinvalAndChangesNothing)
{
    make_read_only(700);
    table(lay.mfn(700))[0] = map(800, P | RW | A);
    table(lay.mfn(700))[1] = map(801, P | US | A);
    table(lay.mfn(700))[2] = map(802, P | US | A | PCD);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700)), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(MmuextTest, PinOfAFrameInUseAsAnotherTypeIsEinval)
{
    const std::pair<unsigned, Mfn> cases[] = {
        {MMUEXT_PIN_L1_TABLE, lay.mfn(700)},   // mapped writable
        {MMUEXT_PIN_L1_TABLE, l2()},           // an L2
        {MMUEXT_PIN_L2_TABLE, l1_of(0)},       // an L1
        {MMUEXT_PIN_L3_TABLE, l4()},
        {MMUEXT_PIN_L4_TABLE, l3()},
    };
    for (auto [cmd, f] : cases) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op_mfn(cmd, f), done), -XEN_EINVAL) << cmd << " " << f.v;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuextTest, PinOfAFrameTheDomainDoesNotOwnIsEperm)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    for (Mfn f : {lay2.mfn(3), Mfn{1}, Mfn{17}}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, f), done), -XEN_EPERM) << f.v;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuextTest, PinOfAFrameBeyondMemoryIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, Mfn{kMachineFrames}), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, Mfn{~0ull >> 12}), done), -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, DoublePinIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L4_TABLE, l4()), done), -XEN_EINVAL);   // the builder pinned it
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, UnpinOfAnUnpinnedTableIsEinval)
{
    for (Mfn f : {l1_of(0), l2(), lay.mfn(700)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, f), done), -XEN_EINVAL) << f.v;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuextTest, UnpinOfAnotherDomainsFrameIsEperm)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, lay2.l4), done), -XEN_EPERM);   // pinned, but not ours
    EXPECT_EQ(done, 0u);
    EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, Mfn{0}), done), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuextTest, NewBaseptrToAFrameThatIsNoL4IsRefused)
{
    const std::pair<Mfn, long> cases[] = {
        {l3(), -XEN_EINVAL}, {l1_of(0), -XEN_EINVAL}, {lay.mfn(700), -XEN_EINVAL},
        {Mfn{kMachineFrames}, -XEN_EINVAL}, {Mfn{0}, -XEN_EPERM}, {Mfn{16}, -XEN_EPERM},
    };
    for (unsigned cmd : {unsigned(MMUEXT_NEW_BASEPTR), unsigned(MMUEXT_NEW_USER_BASEPTR)}) {
        for (auto [f, rc] : cases) {
            if (cmd == MMUEXT_NEW_USER_BASEPTR && f.v == 0) continue;   // means "none" there
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(one(op_mfn(cmd, f), done), rc) << cmd << " " << f.v;
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(MmuextTest, FlushMasksNamingAbsentVcpusAreEinvalAndFlushNothing)
{
    for (uint64_t mask : {uint64_t(0b100), uint64_t(0b111), uint64_t(1) << 63}) {
        for (unsigned cmd : {unsigned(MMUEXT_TLB_FLUSH_MULTI), unsigned(MMUEXT_INVLPG_MULTI)}) {
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(one(op_va(cmd, kVa, &mask), done), -XEN_EINVAL) << cmd << " " << mask;
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

// -EINVAL, as Xen 4.17's mmuext_op answers (update_va_mapping's is -EFAULT).
TEST_F(MmuextTest, FlushMaskAtABadPointerIsEinval)
{
    for (unsigned cmd : {unsigned(MMUEXT_TLB_FLUSH_MULTI), unsigned(MMUEXT_INVLPG_MULTI)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op_va(cmd, kVa, reinterpret_cast<const uint64_t*>(kBadGuestPtr)), done), -XEN_EINVAL);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuextTest, InvlpgOfANonCanonicalAddressIsEinval)
{
    const uint64_t all = 0b11;
    for (unsigned cmd :
         {unsigned(MMUEXT_INVLPG_LOCAL), unsigned(MMUEXT_INVLPG_MULTI), unsigned(MMUEXT_INVLPG_ALL)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(one(op_va(cmd, 0x0000'8000'0000'0000ull, &all), done), -XEN_EINVAL) << cmd;
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

// --- valid operations ----------------------------------------------------------

TEST_F(MmuextTest, PinOfAValidatedTableTakesATypeAndAGeneralReference)
{
    const std::pair<unsigned, Mfn> cases[] = {
        {MMUEXT_PIN_L1_TABLE, l1_of(0)}, {MMUEXT_PIN_L1_TABLE, l1_of(512)},
        {MMUEXT_PIN_L2_TABLE, l2()}, {MMUEXT_PIN_L3_TABLE, l3()}};
    for (auto [cmd, f] : cases) {
        Snapshot before(m);
        unsigned done = 0;
        EXPECT_EQ(one(op_mfn(cmd, f), done), 0);
        EXPECT_EQ(done, 1u);
        const uint64_t pinned = (before.frame(f).type_info + 1) | ti::kPinned;
        EXPECT_TRUE(only(Changes(before).count(f, +1).type_info(f, pinned), m));
    }
}

TEST_F(MmuextTest, PinOfAnUnusedFrameValidatesItAfterFlushingStaleCpus)
{
    make_read_only(700);
    table(lay.mfn(700))[5] = map(800, P | RW | A);   // without US: validation adds it
    table(lay.mfn(700))[6] = map(801, P | US | A);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700)), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({0, 1}))
                         .type_info(lay.mfn(700), PageType::L1, 1, ti::kValidated | ti::kPinned)
                         .count(lay.mfn(700), +1)
                         .word(lay.mfn(700), 5, map(800, P | RW | US | A))
                         .count(lay.mfn(800), +1)
                         .type_count(lay.mfn(800), +1)
                         .count(lay.mfn(801), +1),
                     m));
}

TEST_F(MmuextTest, PinL4OfAFreshTableAndUnpinDevalidatesIt)
{
    prepare_l4_copy(700);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_mfn(MMUEXT_PIN_L4_TABLE, lay.mfn(700)), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({0, 1}))
                         .type_info(lay.mfn(700), PageType::L4, 1, ti::kValidated | ti::kPinned)
                         .count(lay.mfn(700), +1)
                         .count(l3(), +1)
                         .type_count(l3(), +1),
                     m));

    Snapshot pinned(m);
    EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, lay.mfn(700)), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(pinned)
                         .type_info(lay.mfn(700), PageType::L4, 0, 0)
                         .count(lay.mfn(700), -1)
                         .count(l3(), -1)
                         .type_count(l3(), -1),
                     m));
}

TEST_F(MmuextTest, UnpinOfALinkedTableKeepsItValidated)
{
    unsigned done = 0;
    ASSERT_EQ(one(op_mfn(MMUEXT_PIN_L1_TABLE, l1_of(0)), done), 0);
    Snapshot before(m);
    EXPECT_EQ(one(op_mfn(MMUEXT_UNPIN_TABLE, l1_of(0)), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .count(l1_of(0), -1)
                         .type_info(l1_of(0), PageType::L1, 1, ti::kValidated),
                     m));
}

TEST_F(MmuextTest, NewBaseptrSwitchesTheRootAndMovesTheL4Reference)
{
    prepare_l4_copy(700);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_mfn(MMUEXT_NEW_BASEPTR, lay.mfn(700)), done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({0, 1}))
                         .type_info(lay.mfn(700), PageType::L4, 1, ti::kValidated)
                         .count(lay.mfn(700), +1)
                         .count(l3(), +1)
                         .type_count(l3(), +1)
                         .count(l4(), -1)
                         .type_count(l4(), -1)
                         .base(v0(), lay.mfn(700))
                         .base_loads(1),
                     m));
}

TEST_F(MmuextTest, NewBaseptrToTheCurrentRootChangesNothingButReloadsIt)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_mfn(MMUEXT_NEW_BASEPTR, l4()), done, &v1()), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).base_loads(1), m));
}

// The user L4 is not the one in use during a hypercall (the guest's kernel
// mode makes them all): no root is reloaded, no TLB flushed.
TEST_F(MmuextTest, NewUserBaseptrSetsTheUserRootWithoutReloadingAndMfnZeroRemovesIt)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_mfn(MMUEXT_NEW_USER_BASEPTR, l4()), done, &v1()), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).count(l4(), +1).type_count(l4(), +1).base(v1(), l4(), true), m));

    Snapshot mid(m);
    EXPECT_EQ(one(op_mfn(MMUEXT_NEW_USER_BASEPTR, Mfn{0}), done, &v1()), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(mid).count(l4(), -1).type_count(l4(), -1).base(v1(), Mfn{0}, true), m));

    // None stays none.
    Snapshot none(m);
    EXPECT_EQ(one(op_mfn(MMUEXT_NEW_USER_BASEPTR, Mfn{0}), done, &v1()), 0);
    EXPECT_TRUE(only(Changes(none), m));
}

TEST_F(MmuextTest, TlbFlushLocalFlushesTheCallersCpu)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_va(MMUEXT_TLB_FLUSH_LOCAL, 0), done, &v1()), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_EQ(one(op_va(MMUEXT_TLB_FLUSH_LOCAL, 0), done, &v0()), 0);
    EXPECT_TRUE(only(Changes(before).flush(cpus({1})).flush(cpus({0})), m));
}

TEST_F(MmuextTest, TlbFlushMultiFlushesTheCpusOfTheNamedVcpus)
{
    const uint64_t second = 0b10, both = 0b11, none = 0;
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_va(MMUEXT_TLB_FLUSH_MULTI, 0, &second), op_va(MMUEXT_TLB_FLUSH_MULTI, 0, &both),
                      op_va(MMUEXT_TLB_FLUSH_MULTI, 0, &none)},
                     &done),
              0);
    EXPECT_EQ(done, 3u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({1})).flush(cpus({0, 1})).flush(cpus({})), m));
}

TEST_F(MmuextTest, TlbFlushAllFlushesEveryCpuOfTheDomain)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(one(op_va(MMUEXT_TLB_FLUSH_ALL, 0), done, &v1()), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0, 1})), m));
}

TEST_F(MmuextTest, InvlpgLocalMultiAndAllFlushOnePage)
{
    const uint64_t first = 0b01;
    const FlushRequest page{FlushKind::Page, Vaddr{kVa}};
    const FlushRequest high{FlushKind::Page, Vaddr{0xffff'8000'0000'1000ull}};   // canonical, upper half
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_va(MMUEXT_INVLPG_LOCAL, kVa), op_va(MMUEXT_INVLPG_MULTI, kVa, &first),
                      op_va(MMUEXT_INVLPG_ALL, kVa), op_va(MMUEXT_INVLPG_ALL, high.va.v)},
                     &done, &v1()),
              0);
    EXPECT_EQ(done, 4u);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({1}), page)
                         .flush(cpus({0}), page)
                         .flush(cpus({0, 1}), page)
                         .flush(cpus({0, 1}), high),
                     m));
}

TEST_F(MmuextTest, MixedBatchRunsInOrder)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, l1_of(512)), op_va(MMUEXT_TLB_FLUSH_LOCAL, 0),
                      op_mfn(MMUEXT_UNPIN_TABLE, l1_of(512)), op_mfn(MMUEXT_UNPIN_TABLE, l1_of(512))},
                     &done),
              -XEN_EINVAL);   // the second unpin: no longer pinned
    EXPECT_EQ(done, 3u);
    EXPECT_TRUE(only(Changes(before).flush(cpus({0})), m));
}

} // namespace
} // namespace pvmmu::test
