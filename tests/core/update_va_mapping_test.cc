// HYPERVISOR_update_va_mapping (docs/design.md §3): the L1 entry that maps va in the caller's
// address space gets a checked normal (cmd 0) update, then the flush the UVMF flags
// ask for: none, one page or everything, on the local CPU, all of the domain's CPUs
// or the CPUs of a vCPU bitmap (UVMF_MULTI: a pointer ORed into the flags).
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

class UpdateVaMappingTest : public CoreTest {
protected:
    static constexpr uint64_t kG = 600;
    Vaddr va() const { return lay.va(kG); }
    static uint64_t multi(const uint64_t* mask, uint64_t type) { return uint64_t(mask) | UVMF_MULTI | type; }
};

// --- invalid calls -------------------------------------------------------------

TEST_F(UpdateVaMappingTest, NonCanonicalAddressIsEinval)
{
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(Vaddr{0x0000'8000'0000'0000ull}, map(kG, kDataFlags | NX), UVMF_NONE),
              -XEN_EINVAL);
    EXPECT_EQ(update_va_mapping(Vaddr{0xfff0'0000'0000'0000ull}, map(kG, kDataFlags | NX), UVMF_NONE),
              -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(UpdateVaMappingTest, FlushTypeThreeIsEinval)
{
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_FLUSHTYPE_MASK | UVMF_ALL), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(UpdateVaMappingTest, AddressWithoutAnL1IsEinval)
{
    // L4 slot 0 is empty; the physmap's L2 has entries only for gpfns below 1024;
    // slot 256 is the hypervisor's.
    for (Vaddr a : {Vaddr{0x1000}, lay.va(5000), Vaddr{0xffff'8000'0000'0000ull}}) {
        Snapshot before(m);
        EXPECT_EQ(update_va_mapping(a, map(kG, kDataFlags), UVMF_INVLPG | UVMF_ALL), -XEN_EINVAL) << a.v;
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(UpdateVaMappingTest, MultiMaskNamingAbsentVcpusIsEinvalAndChangesNothing)
{
    const uint64_t mask = 0b101;
    for (uint64_t type : {UVMF_TLB_FLUSH, UVMF_INVLPG}) {
        Snapshot before(m);
        EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), multi(&mask, type)), -XEN_EINVAL);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(UpdateVaMappingTest, MultiMaskAtABadPointerIsEfaultAndChangesNothing)
{
    for (uint64_t type : {UVMF_TLB_FLUSH, UVMF_INVLPG}) {
        Snapshot before(m);
        EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), kBadGuestPtr | type), -XEN_EFAULT);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(UpdateVaMappingTest, EntryRulesAreThoseOfMmuUpdate)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    const std::pair<uint64_t, long> cases[] = {
        {map(kG, kDataFlags | PCD), -XEN_EINVAL},          // disallowed flag
        {map(kG, kDataFlags | G), -XEN_EINVAL},
        {map(l2(), kDataFlags), -XEN_EINVAL},              // writable page table
        {map(lay2.mfn(9), P | US | A), -XEN_EPERM},         // foreign frame
        {map(Mfn{4}, P | US | A), -XEN_EPERM},              // hypervisor frame
        {map(Mfn{kMachineFrames}, P | US | A), -XEN_EINVAL},   // beyond memory
    };
    for (auto [val, rc] : cases) {
        Snapshot before(m);
        EXPECT_EQ(update_va_mapping(va(), val, UVMF_INVLPG | UVMF_ALL), rc) << std::hex << val;
        EXPECT_TRUE(unchanged(before, m));
    }
    // RW raise of the entry that maps a page table (gpfn 2 is the L2).
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(lay.va(2), map(2, kDataFlags), UVMF_NONE), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

// --- valid calls ---------------------------------------------------------------

TEST_F(UpdateVaMappingTest, NoFlushUpdatesTheEntryOnlyAndNeverReadsTheTarget)
{
    Snapshot before(m);
    // UVMF_NONE: the target bits are not looked at, even a bad bitmap pointer.
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_NONE | kBadGuestPtr), 0);
    EXPECT_TRUE(only(Changes(before).word(l1_of(kG), idx(kG), map(kG, kDataFlags | NX)), m));
}

TEST_F(UpdateVaMappingTest, LocalFlushesOnlyTheCallersCpu)
{
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_INVLPG | UVMF_LOCAL, &v1()), 0);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags), UVMF_TLB_FLUSH | UVMF_LOCAL, &v0()), 0);
    EXPECT_TRUE(only(Changes(before)
                         .flush(cpus({1}), FlushRequest{FlushKind::Page, va()})
                         .flush(cpus({0})),
                     m));
}

TEST_F(UpdateVaMappingTest, AllFlushesEveryCpuOfTheDomain)
{
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_INVLPG | UVMF_ALL), 0);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(kG), idx(kG), map(kG, kDataFlags | NX))
                         .flush(cpus({0, 1}), FlushRequest{FlushKind::Page, va()}),
                     m));
    Snapshot mid(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags), UVMF_TLB_FLUSH | UVMF_ALL, &v1()), 0);
    EXPECT_TRUE(only(Changes(mid).word(l1_of(kG), idx(kG), map(kG, kDataFlags)).flush(cpus({0, 1})), m));
}

TEST_F(UpdateVaMappingTest, MultiFlushesTheCpusOfTheBitmap)
{
    const uint64_t second = 0b10, both = 0b11;
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), multi(&second, UVMF_INVLPG)), 0);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX | AVL_LO), multi(&both, UVMF_TLB_FLUSH)), 0);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(kG), idx(kG), map(kG, kDataFlags | NX | AVL_LO))
                         .flush(cpus({1}), FlushRequest{FlushKind::Page, va()})
                         .flush(cpus({0, 1})),
                     m));
}

TEST_F(UpdateVaMappingTest, RemapMovesTheReferences)
{
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(900, P | US | A), UVMF_INVLPG | UVMF_LOCAL), 0);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(kG), idx(kG), map(900, P | US | A))
                         .count(lay.mfn(kG), -1)
                         .type_count(lay.mfn(kG), -1)
                         .count(lay.mfn(900), +1)
                         .flush(cpus({0}), FlushRequest{FlushKind::Page, va()}),
                     m));
}

TEST_F(UpdateVaMappingTest, HasNormalUpdateSemanticsSoHardwareDirtyIsLost)
{
    const uint64_t seen = *pte(kG);
    std::atomic_ref<uint64_t>(*pte(kG)).fetch_or(D);
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), seen | NX, UVMF_NONE), 0);
    EXPECT_TRUE(only(Changes(before).word(l1_of(kG), idx(kG), seen | NX), m));
}

TEST_F(UpdateVaMappingTest, WalksTheCallersOwnRoot)
{
    // vCPU 1 gets a root whose slot 1 is empty: the same address has no L1 there.
    make_read_only(700);
    unsigned done = 0;
    ASSERT_EQ(mmuext({op_mfn(MMUEXT_NEW_BASEPTR, lay.mfn(700))}, &done, &v1()), 0);
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_NONE, &v1()), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
    EXPECT_EQ(update_va_mapping(va(), map(kG, kDataFlags | NX), UVMF_NONE, &v0()), 0);
    EXPECT_TRUE(only(Changes(before).word(l1_of(kG), idx(kG), map(kG, kDataFlags | NX)), m));
}


// --- the walk to the L1 ------------------------------------
//
// Bare metal keeps its own tables in the L4 slots 256-271 of every validated guest
// L4 (Platform::reserved_l4_entry): in slot 262 a direct map of all machine memory
// in 2 MiB pages. Here every reserved slot gets such a map, in hypervisor frames,
// and the guest pins the 2 MiB-aligned frame mfn 512 as an L1: a walk that
// followed the hypervisor's entries, or took a 2 MiB leaf's frame for the L1,
// would rewrite that L1's entries.
class UpdateVaMappingWalkTest : public UpdateVaMappingTest {
protected:
    static constexpr Mfn kHvL3{8}, kHvL2{9};                 // hypervisor frames
    static constexpr uint64_t kBigL1 = 480;                   // gpfn of mfn 512
    static constexpr uint64_t kLinkNoUs = P | RW | A;         // the hypervisor's entries
    static constexpr uint64_t kTwoMiB = uint64_t(1) << 21;

    void SetUp() override
    {
        UpdateVaMappingTest::SetUp();
        ASSERT_EQ(lay.mfn(kBigL1).v, 512u);
        // The direct map: L3[0] -> L2, L2[i] = 2 MiB page i (the machine's 2.5).
        table(kHvL3)[0] = Pte::make(kHvL2, kLinkNoUs).v;
        for (uint64_t i = 0; i * kTwoMiB < kMachineFrames * kPageSize; ++i)
            table(kHvL2)[i] = Pte::make(Mfn{i * kTwoMiB / kPageSize}, kLinkNoUs | PS).v;
        for (unsigned s = hv().config().l4_reserved_first; s <= hv().config().l4_reserved_last; ++s)
            m.platform().reserved_l4[s] = Pte::make(kHvL3, kLinkNoUs).v;
        // A root validated with those entries: a copy of the builder's L4.
        make_read_only(700);
        std::memcpy(table(lay.mfn(700)), table(l4()), kPageSize);
        unsigned done = 0;
        ASSERT_EQ(mmuext({op_mfn(MMUEXT_NEW_BASEPTR, lay.mfn(700))}, &done), 0);
        ASSERT_EQ(table(lay.mfn(700))[262], Pte::make(kHvL3, kLinkNoUs).v);
        // The victim: a pinned L1 at a 2 MiB boundary, mapping gpfn 600 read-only.
        make_read_only(kBigL1);
        table(lay.mfn(kBigL1))[7] = map(600, P | US | A);
        ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(kBigL1))}, &done), 0);
    }

    static Vaddr in_slot(unsigned slot, uint64_t offset)
    {
        return Vaddr{0xffff'0000'0000'0000ull | (uint64_t(slot) << 39) | offset};
    }
    // Where the direct map shows entry 7's page of the pinned L1's 2 MiB.
    static uint64_t victim_offset() { return 512 * kPageSize + 7 * kPageSize; }
};

TEST_F(UpdateVaMappingWalkTest, NoAddressInsideAHypervisorSlotHasAnL1)
{
    const uint64_t offsets[] = {0, victim_offset(), victim_offset() + 0x123, kTwoMiB - kPageSize,
                                (uint64_t(1) << 39) - kPageSize};
    for (unsigned s = 256; s <= 271; ++s) {
        for (uint64_t off : offsets) {
            Snapshot before(m);
            EXPECT_EQ(update_va_mapping(in_slot(s, off), map(kG, P | US | A | NX), UVMF_INVLPG | UVMF_LOCAL),
                      -XEN_EINVAL)
                << "slot " << s << " offset 0x" << std::hex << off;
            EXPECT_TRUE(unchanged(before, m)) << "slot " << s << " offset 0x" << std::hex << off;
        }
    }
}

// A guest table cannot hold a PS entry (entry rules), but a walk that takes no
// lock may read a table the guest has since unlinked and rewritten: it must
// stop at a PS entry rather than take the frame it names for an L1.
TEST_F(UpdateVaMappingWalkTest, WalkStopsAtASuperpageEntry)
{
    std::atomic_ref<uint64_t>(table(l2())[5]).store(Pte::make(lay.mfn(kBigL1), kTableLinkFlags | PS).v);
    Snapshot before(m);
    EXPECT_EQ(update_va_mapping(lay.va(5 * 512 + 7), map(kG, P | US | A | NX), UVMF_NONE), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

// Likewise a table read during the walk may name a frame that is not the
// domain's (here a hypervisor frame, with no PS on the way): the walk checks the
// owner of every table it reads, not only of the L1 it ends on.
TEST_F(UpdateVaMappingWalkTest, WalkChecksTheOwnerOfEveryTable)
{
    constexpr Mfn kOtherL3{10}, kOtherL2{11};
    table(kOtherL3)[0] = Pte::make(kOtherL2, kLinkNoUs).v;
    table(kOtherL2)[1] = Pte::make(lay.mfn(kBigL1), kLinkNoUs).v;
    std::atomic_ref<uint64_t>(table(lay.mfn(700))[5]).store(Pte::make(kOtherL3, kTableLinkFlags).v);
    Snapshot before(m);
    const Vaddr va{(uint64_t(5) << 39) | victim_offset()};
    EXPECT_EQ(update_va_mapping(va, map(kG, P | US | A | NX), UVMF_NONE), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

} // namespace
} // namespace pvmmu::test
