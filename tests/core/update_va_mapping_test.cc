// HYPERVISOR_update_va_mapping (SPEC §3): the L1 entry that maps va in the caller's
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

} // namespace
} // namespace pvmmu::test
