// HYPERVISOR_mmu_update, commands 0, 1 and 2 and the batch semantics (docs/design.md §3):
// invalid requests first, then what each command does, every time with the exact
// rc, done count and the exact set of changes to the machine.
#include "support/core_fixture.h"

namespace pvmmu::test {
namespace {

using MmuUpdateTest = CoreTest;

// --- invalid requests ----------------------------------------------------------

TEST_F(MmuUpdateTest, EmptyBatchSucceedsWithDoneZero)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({}, &done), 0);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuUpdateTest, Commands5To7AreEnosysAfterTheEarlierRequests)
{
    uint64_t g = 600;
    for (unsigned cmd : {5u, 6u, 7u}) {
        SCOPED_TRACE(cmd);
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | NX)),
                              req(g + 1, cmd, map(g + 1, kDataFlags | NX)),
                              req(g + 2, MMU_ATOMIC_PT_UPDATE, map(g + 2, kDataFlags | NX))},
                             &done),
                  -XEN_ENOSYS);
        EXPECT_EQ(done, 1u);
        EXPECT_TRUE(only(Changes(before).word(l1_of(g), idx(g), map(g, kDataFlags | NX)), m));
        g += 10;
    }
}

TEST_F(MmuUpdateTest, BadRequestMidBatchStopsItWithEarlierAppliedAndLaterUntouched)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX)),
                          req(601, MMU_ATOMIC_PT_UPDATE, map(601, kDataFlags | NX)),
                          mmu_update_t{ptr(Mfn{0}, 0, MMU_NORMAL_PT_UPDATE), 0},   // the hypervisor's
                          req(603, MMU_NORMAL_PT_UPDATE, map(603, kDataFlags | NX))},
                         &done),
              -XEN_EINVAL);
    EXPECT_EQ(done, 2u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(600, kDataFlags | NX))
                         .word(l1_of(601), idx(601), map(601, kDataFlags | NX)),
                     m));
}

TEST_F(MmuUpdateTest, FailureAfterManyChunksReportsTheExactDoneCount)
{
    // More requests than one copy-in chunk (32): done counts across chunks.
    std::vector<mmu_update_t> reqs;
    Snapshot before(m);
    Changes expected(before);
    for (uint64_t g = 512; g < 512 + 70; ++g) {
        reqs.push_back(req(g, MMU_ATOMIC_PT_UPDATE, map(g, kDataFlags | NX)));
        if (g < 512 + 45) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX));
    }
    reqs[45].val |= PCD;
    unsigned done = 0;
    EXPECT_EQ(mmu_update(reqs, &done), -XEN_EINVAL);
    EXPECT_EQ(done, 45u);
    EXPECT_TRUE(only(expected, m));
}

TEST_F(MmuUpdateTest, PtrToAFrameThatIsNotTheCallersIsEinval)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    const Mfn not_tables[] = {Mfn{0},          // hypervisor frame
                              Mfn{16},         // I/O frame
                              lay2.mfn(3),     // another domain's L1
                              Mfn{kMachineFrames + 5}};   // beyond machine memory
    for (Mfn t : not_tables) {
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
            SCOPED_TRACE(t.v);
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(mmu_update({mmu_update_t{ptr(t, 4, cmd), 0}}, &done), -XEN_EINVAL);
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

// A frame of the caller that is no page table takes `val` as given, as on Xen
// (do_mmu_update's writable case): Linux writes the
// entries of tables it has not pinned yet with cmd 0. The frame's references
// stay as they were.
TEST_F(MmuUpdateTest, DataFrameOfTheCallerIsWrittenAsGiven)
{
    const uint64_t present = map(800, kDataFlags | NX), bogus = (uint64_t(1) << 51) | 0x1ff;
    for (unsigned cmd : {unsigned(MMU_NORMAL_PT_UPDATE), unsigned(MMU_ATOMIC_PT_UPDATE), 3u}) {
        SCOPED_TRACE(cmd);
        const Mfn f = lay.mfn(700 + cmd);
        table(f)[9] = 0x55;   // no entry rule or A/D fold applies: overwritten
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({mmu_update_t{ptr(f, 7, cmd), present}, mmu_update_t{ptr(f, 9, cmd), bogus}}, &done),
                  0);
        EXPECT_EQ(done, 2u);
        EXPECT_TRUE(only(Changes(before).word(f, 7, present).word(f, 9, bogus), m));
    }
}

// A batch of such writes (a new mm's tables before they are pinned, which
// Linux fills by cmd 0) stops at its first failure, the earlier ones done.
TEST_F(MmuUpdateTest, DataFrameWritesInABatchStopAtTheFirstFailure)
{
    for (unsigned cmd : {unsigned(MMU_NORMAL_PT_UPDATE), unsigned(MMU_ATOMIC_PT_UPDATE)}) {
        SCOPED_TRACE(cmd);
        const Mfn f = lay.mfn(700 + cmd);
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({mmu_update_t{ptr(f, 7, cmd), 0x1111}, mmu_update_t{ptr(f, 8, cmd), 0x2222},
                              mmu_update_t{ptr(Mfn{0}, 4, cmd), 0x3333}, mmu_update_t{ptr(f, 9, cmd), 0x4444}},
                             &done),
                  -XEN_EINVAL);
        EXPECT_EQ(done, 2u);
        EXPECT_TRUE(only(Changes(before).word(f, 7, 0x1111).word(f, 8, 0x2222), m));
    }
}

// Such writes in a run (core: one reference for the run) stop at another
// frame or command, and a page table's entry between them is checked as ever.
TEST_F(MmuUpdateTest, DataFrameWritesOfSeveralFramesAndCommandsInOneBatch)
{
    const Mfn f = lay.mfn(700), g = lay.mfn(701);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({mmu_update_t{ptr(f, 1, MMU_NORMAL_PT_UPDATE), 0x11},
                          mmu_update_t{ptr(f, 2, MMU_NORMAL_PT_UPDATE), 0x22},
                          mmu_update_t{ptr(g, 1, MMU_NORMAL_PT_UPDATE), 0x33},
                          mmu_update_t{ptr(f, 3, MMU_PT_UPDATE_NO_TRANSLATE), 0x44},
                          mmu_update_t{ptr(f, 4, MMU_ATOMIC_PT_UPDATE), 0x55},
                          req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX)),
                          mmu_update_t{ptr(g, 2, MMU_NORMAL_PT_UPDATE), 0x66}},
                         &done),
              0);
    EXPECT_EQ(done, 7u);
    EXPECT_TRUE(only(Changes(before)
                         .word(f, 1, 0x11)
                         .word(f, 2, 0x22)
                         .word(g, 1, 0x33)
                         .word(f, 3, 0x44)
                         .word(f, 4, 0x55)
                         .word(l1_of(600), idx(600), map(600, kDataFlags | NX))
                         .word(g, 2, 0x66),
                     m));
}

// A frame nothing maps (no type reference) is written as well; it is left
// writable with no reference.
TEST_F(MmuUpdateTest, UnmappedDataFrameIsWrittenAndLeftWithoutReference)
{
    ASSERT_EQ(mmu_update({req(710, MMU_NORMAL_PT_UPDATE, 0)}, nullptr), 0);
    ASSERT_EQ(ti::count(frame(lay.mfn(710)).type_info.load()), 0u);
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({mmu_update_t{ptr(lay.mfn(710), 0, MMU_NORMAL_PT_UPDATE), 1234}}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(lay.mfn(710), 0, 1234), m));
}

TEST_F(MmuUpdateTest, MachphysWithOffsetBitsIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({mmu_update_t{(maddr_of(lay.mfn(600)).v + 8) | MMU_MACHPHYS_UPDATE, 1234}},
                         &done),
              -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuUpdateTest, MachphysOfAFrameBeyondMemoryIsEinval)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({mmu_update_t{maddr_of(Mfn{kMachineFrames}).v | MMU_MACHPHYS_UPDATE, 1}}, &done),
              -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuUpdateTest, MachphysOfAFrameTheDomainDoesNotOwnIsEperm)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    for (Mfn f : {lay2.mfn(10), Mfn{0}, Mfn{16}}) {
        SCOPED_TRACE(f.v);
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({mmu_update_t{maddr_of(f).v | MMU_MACHPHYS_UPDATE, 1}}, &done), -XEN_EPERM);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuUpdateTest, MappingAnotherDomainsFrameIsEperm)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
        for (uint64_t flags : {P | US | A, kDataFlags}) {
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(mmu_update({req(600, cmd, map(lay2.mfn(10), flags))}, &done), -XEN_EPERM);
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(MmuUpdateTest, MappingAHypervisorFrameIsEpermEvenWithMapForeign)
{
    d->policy.allow(Perm::MapForeign);
    for (uint64_t fd : {uint64_t(DOMID_SELF), uint64_t(DOMID_IO)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(Mfn{3}, P | US | A))}, &done, fd),
                  -XEN_EPERM);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuUpdateTest, MappingAnIoFrameIsEpermWithoutForeigndomIo)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, map(Mfn{16}, kDataFlags))}, &done), -XEN_EPERM);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuUpdateTest, MappingAFreeFrameIsEperm)
{
    d->policy.allow(Perm::MapForeign);
    const Mfn free_frame{kMachineFrames - 1};
    ASSERT_EQ(frame(free_frame).owner.load(), kOwnerFree);
    for (uint64_t fd : {uint64_t(DOMID_SELF), uint64_t(DOMID_IO)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(free_frame, P | US | A))}, &done, fd),
                  -XEN_EPERM);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuUpdateTest, ForeigndomWithoutPrivilegeIsEpermAndNothingRuns)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    for (uint64_t fd : {uint64_t(2), uint64_t(DOMID_IO)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX))}, &done, fd),
                  -XEN_EPERM);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuUpdateTest, NonexistentForeigndomIsEsrch)
{
    d->policy.allow(Perm::MapForeign);
    for (uint64_t fd : {uint64_t(9), uint64_t(DOMID_XEN)}) {
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX))}, &done, fd),
                  -XEN_ESRCH);
        EXPECT_EQ(done, 0u);
        EXPECT_TRUE(unchanged(before, m));
    }
}

TEST_F(MmuUpdateTest, WritableMappingOfAPageTableFrameIsEinval)
{
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE, MMU_PT_UPDATE_NO_TRANSLATE}) {
        for (Mfn t : {l4(), l3(), l2(), l1_of(0), l1_of(512)}) {
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(mmu_update({req(600, cmd, map(t, kDataFlags))}, &done), -XEN_EINVAL);
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(MmuUpdateTest, RwRaiseOntoAPageTableFrameIsEinval)
{
    // gpfns 0-4 hold the page tables and are mapped read-only: raise their own entries.
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE, MMU_PT_UPDATE_NO_TRANSLATE}) {
        for (uint64_t g = 0; g < 5; ++g) {
            Snapshot before(m);
            unsigned done = 99;
            EXPECT_EQ(mmu_update({req(g, cmd, map(g, kDataFlags))}, &done), -XEN_EINVAL);
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(MmuUpdateTest, DisallowedFlagBitsAreEinval)
{
    const uint64_t bad[] = {PWT, PCD, PAT, G, 1ull << 59, 1ull << 62, PK};
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
        for (uint64_t bit : bad) {
            SCOPED_TRACE(bit);
            Snapshot before(m);
            unsigned done = 99;
            // Both on the same frame (a flag change) and onto another frame (a remap).
            EXPECT_EQ(mmu_update({req(600, cmd, map(600, kDataFlags | bit))}, &done), -XEN_EINVAL);
            EXPECT_EQ(done, 0u);
            EXPECT_EQ(mmu_update({req(600, cmd, map(700, P | US | A | bit))}, &done), -XEN_EINVAL);
            EXPECT_EQ(done, 0u);
            EXPECT_TRUE(unchanged(before, m));
        }
    }
}

TEST_F(MmuUpdateTest, L4ReservedSlots256To271AreEinval)
{
    for (unsigned slot : {256u, 263u, 271u}) {
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
            for (uint64_t val : {uint64_t(0), map(l3(), kTableLinkFlags)}) {
                Snapshot before(m);
                unsigned done = 99;
                EXPECT_EQ(mmu_update({mmu_update_t{ptr(l4(), slot, cmd), val}}, &done), -XEN_EINVAL);
                EXPECT_EQ(done, 0u);
                EXPECT_TRUE(unchanged(before, m));
            }
        }
    }
    // The slots around them are the guest's.
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({mmu_update_t{ptr(l4(), 255, 0), 0}, mmu_update_t{ptr(l4(), 272, 0), 0}}, &done), 0);
    EXPECT_EQ(done, 2u);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(MmuUpdateTest, BadRequestArrayPointerIsEfaultWithDoneZero)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, kBadGuestPtr, 3, uint64_t(&done), DOMID_SELF),
              -XEN_EFAULT);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
}

// A batch of one request goes its own way (core/batch.h run_one): the same
// answers as a longer batch's first request.
TEST_F(MmuUpdateTest, OneRequestBatchAnswersAsTheLoop)
{
    Snapshot before(m);
    unsigned done = 99;
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, kBadGuestPtr, 1, uint64_t(&done), DOMID_SELF),
              -XEN_EFAULT);
    EXPECT_EQ(done, 0u);
    done = 99;
    mmu_update_t bad = req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | pte_bit::G));
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(&bad), 1, uint64_t(&done), DOMID_SELF),
              -XEN_EINVAL);
    EXPECT_EQ(done, 0u);
    EXPECT_TRUE(unchanged(before, m));
    done = 99;
    mmu_update_t r = req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX));
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(&r), 1, uint64_t(&done), DOMID_SELF), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(MmuUpdateTest, BadPdonePointerIsEfaultAfterTheRequestsRan)
{
    // As in Xen, the requests are done before the count is written back; pvmmu
    // reports the failed write-back (Xen ignores it).
    Snapshot before(m);
    mmu_update_t r = req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX));
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(&r), 1, kBadGuestPtr, DOMID_SELF), -XEN_EFAULT);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(MmuUpdateTest, NullPdoneIsAllowed)
{
    Snapshot before(m);
    mmu_update_t r = req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX));
    EXPECT_EQ(m.call(v0(), __HYPERVISOR_mmu_update, uint64_t(&r), 1, 0, DOMID_SELF), 0);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

// --- valid requests ------------------------------------------------------------

TEST_F(MmuUpdateTest, NormalUpdateChangesFlagsOfOneEntryAndNothingElse)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX | AVL_LO | (1ull << 52)))},
                         &done),
              0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600),
                                          map(600, kDataFlags | NX | AVL_LO | (1ull << 52))),
                     m));
}

// Xen's MMU_PT_UPDATE_NO_TRANSLATE ("val not translated"): for a PV guest it is
// cmd 0, alone, in a run of its own on one L1 (the fused path) and between
// other commands; its checks are cmd 0's (the two tests of writable mappings of
// page tables above).
TEST_F(MmuUpdateTest, NoTranslateIsANormalUpdate)
{
    // D on every entry first: cmd 0 (and so cmd 3) stores the value exactly,
    // D gone; cmd 2 keeps the D it finds.
    unsigned done = 0;
    for (uint64_t g : {600, 601, 602, 603, 604})
        ASSERT_EQ(mmu_update({req(g, MMU_NORMAL_PT_UPDATE, map(g, kDataFlags | NX | D))}, &done), 0);
    Snapshot before(m);
    EXPECT_EQ(mmu_update({req(600, MMU_PT_UPDATE_NO_TRANSLATE, map(600, kDataFlags | NX | AVL_LO)),
                          req(601, MMU_PT_UPDATE_NO_TRANSLATE, map(601, kDataFlags | NX | AVL_LO)),
                          req(602, MMU_ATOMIC_PT_UPDATE, map(602, kDataFlags | NX | AVL_LO)),
                          req(603, MMU_PT_UPDATE_NO_TRANSLATE, map(603, kDataFlags | NX | AVL_LO)),
                          req(604, MMU_NORMAL_PT_UPDATE, map(604, kDataFlags | NX | AVL_LO))},
                         &done),
              0);
    EXPECT_EQ(done, 5u);
    Changes expected(before);
    for (uint64_t g : {600, 601, 603, 604}) expected.word(l1_of(g), idx(g), map(g, kDataFlags | NX | AVL_LO));
    expected.word(l1_of(602), idx(602), map(602, kDataFlags | NX | AVL_LO | D));
    EXPECT_TRUE(only(expected, m));
}

TEST_F(MmuUpdateTest, NormalUpdateMakesEveryPresentEntryUserAccessible)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, P | RW | A))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, P | RW | US | A)), m));
}

TEST_F(MmuUpdateTest, NormalUpdateOfANonPresentEntryStoresAnyValue)
{
    // Non-present values (swap entries) carry no references and are not checked.
    make_read_only(600);
    must_update(req(600, MMU_NORMAL_PT_UPDATE, 0));
    Snapshot before(m);
    const uint64_t swap = 0xfff0'0000'dead'b000ull | PCD | PWT | G | RW;
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, swap)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), swap), m));
}

// A batch filling entries that map nothing (fork's copies into a child's
// pinned L1): each request's references, and the batch stopped at its first
// failure, whichever way mmu_update takes them (core/l1_run.h, pt_update).
class MmuUpdateFillTest : public CoreTest {
protected:
    void SetUp() override
    {
        CoreTest::SetUp();
        make_read_only(700);   // zeroed by the builder: an L1 of empty entries
        unsigned done = 0;
        ASSERT_EQ(mmuext({op_mfn(MMUEXT_PIN_L1_TABLE, lay.mfn(700))}, &done), 0);
    }
    mmu_update_t fill(unsigned index, uint64_t val, unsigned cmd = MMU_NORMAL_PT_UPDATE) const
    {
        return mmu_update_t{ptr(lay.mfn(700), index, cmd), val};
    }
};

TEST_F(MmuUpdateFillTest, FillsTakeTheirReferencesUpToTheFirstFailure)
{
    for (unsigned cmd : {unsigned(MMU_NORMAL_PT_UPDATE), unsigned(MMU_ATOMIC_PT_UPDATE)}) {
        const unsigned b = cmd == MMU_NORMAL_PT_UPDATE ? 0 : 8;
        Snapshot before(m);
        unsigned done = 99;
        EXPECT_EQ(mmu_update({fill(b, map(800 + b, P | RW | A), cmd), fill(b + 1, map(801 + b, P | A), cmd),
                              fill(b + 2, map(Mfn{2}, P | A), cmd), fill(b + 3, map(803 + b, P | A), cmd)},
                             &done),
                  -XEN_EPERM)
            << cmd;
        EXPECT_EQ(done, 2u);
        EXPECT_TRUE(only(Changes(before)
                             .word(lay.mfn(700), b, map(800 + b, P | RW | US | A))
                             .word(lay.mfn(700), b + 1, map(801 + b, P | US | A))
                             .count(lay.mfn(800 + b), +1)
                             .type_count(lay.mfn(800 + b), +1)
                             .count(lay.mfn(801 + b), +1),
                         m))
            << cmd;
    }
}

TEST_F(MmuUpdateFillTest, AnotherFrameForAFilledEntryDropsTheFirstOnesReference)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({fill(0, map(800, P | A)), fill(1, map(801, P | A)), fill(0, map(802, P | A)),
                          fill(2, map(803, P | A))},
                         &done),
              0);
    EXPECT_EQ(done, 4u);
    EXPECT_TRUE(only(Changes(before)
                         .word(lay.mfn(700), 0, map(802, P | US | A))
                         .word(lay.mfn(700), 1, map(801, P | US | A))
                         .word(lay.mfn(700), 2, map(803, P | US | A))
                         .count(lay.mfn(801), +1)
                         .count(lay.mfn(802), +1)
                         .count(lay.mfn(803), +1),
                     m));
}

TEST_F(MmuUpdateTest, MachphysUpdateSetsTheM2pEntryOnly)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({mmu_update_t{maddr_of(lay.mfn(600)).v | MMU_MACHPHYS_UPDATE, 0x1234}}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).m2p(lay.mfn(600), 0x1234), m));
}

TEST_F(MmuUpdateTest, ClearingAnEntryDropsItsReferences)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, 0)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), 0)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1),
                     m));
}

TEST_F(MmuUpdateTest, AtomicClearKeepsTheAdBitsOfTheOldEntry)
{
    // cmd 2 hands the old mapping's A/D back in the entry it leaves non-present
    // (docs/abi.md §4.3): the guest reads them back, an atomic get-and-clear.
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, 0)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), A | D)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1),
                     m));
}

TEST_F(MmuUpdateTest, AtomicUpdatePreservesDirtySetByHardwareAfterTheGuestRead)
{
    // The seed's race, single-threaded: the guest reads the entry (no D), the walker
    // sets D in the live entry, the guest installs its new value (without D).
    const uint64_t seen = *pte(600);
    ASSERT_EQ(seen & D, 0u);
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D, std::memory_order_acq_rel);   // "hardware"
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, seen | NX)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), seen | NX | D), m));
}

// --- cmd 2's A/D across a frame or P change -------------
// The A/D bits of the replaced entry belong to the frame it mapped: folded only
// into a new value that maps the same frame, handed back exactly in a value
// that maps nothing, never carried into another frame's mapping.

TEST_F(MmuUpdateTest, AtomicRemapInstallsTheNewValueWithoutTheOldFramesAd)
{
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D);   // the old frame was written
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, map(700, P | US))}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(700, P | US))
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1)
                         .count(lay.mfn(700), +1),
                     m));
}

TEST_F(MmuUpdateTest, AtomicClearHandsBackExactlyTheOldAdBits)
{
    // The old entry has A, not D; the non-present value sets D itself (a swap
    // entry's bit 6, say): the cleared entry holds the old A/D, not val's.
    ASSERT_EQ(*pte(600) & AD, A);
    const uint64_t swap = 0x1234'5000ull | D | (1ull << 9);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, swap)}, &done), 0);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), (swap & ~AD) | A)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1),
                     m));
}

TEST_F(MmuUpdateTest, AtomicWriteOverANonPresentEntryInstallsValExactly)
{
    // Bits 5 and 6 of a non-present entry are the guest's, not hardware A/D:
    // nothing of them is folded into the next value, present or not. The entry
    // gets them again before each value: the first value's install replaced them.
    for (uint64_t val : {uint64_t(0x5678'9000ull), map(600, P | RW | US)}) {
        must_update(req(600, MMU_NORMAL_PT_UPDATE, 0x1234'5000ull | A | D));
        ASSERT_EQ(*pte(600), 0x1234'5000ull | A | D);
        unsigned done = 0;
        EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, val)}, &done), 0) << std::hex << val;
        EXPECT_EQ(*pte(600), val) << std::hex << val;
    }
}

TEST_F(MmuUpdateTest, NormalUpdateLosesDirtySetByHardwareAfterTheGuestRead)
{
    // Documents the difference: cmd 0 is Xen's plain checked write.
    const uint64_t seen = *pte(600);
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D, std::memory_order_acq_rel);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, seen | NX)}, &done), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), seen | NX), m));
}

TEST_F(MmuUpdateTest, ForeignFrameCanBeMappedWithMapForeignAndForeigndom)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    d->policy.allow(Perm::MapForeign);
    Snapshot before(m);
    unsigned done = 0;
    // Own frames stay mappable in the same batch.
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(lay2.mfn(10), kDataFlags)),
                          req(601, MMU_NORMAL_PT_UPDATE, map(lay2.mfn(11), P | US | A)),
                          req(602, MMU_NORMAL_PT_UPDATE, map(603, P | US | A))},
                         &done, 2),
              0);
    EXPECT_EQ(done, 3u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(lay2.mfn(10), kDataFlags))
                         .word(l1_of(601), idx(601), map(lay2.mfn(11), P | US | A))
                         .word(l1_of(602), idx(602), map(603, P | US | A))
                         .count(lay2.mfn(10), +1)
                         .type_count(lay2.mfn(10), +1)
                         .count(lay2.mfn(11), +1)
                         .count(lay.mfn(603), +1)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1)
                         .count(lay.mfn(601), -1)
                         .type_count(lay.mfn(601), -1)
                         .count(lay.mfn(602), -1)
                         .type_count(lay.mfn(602), -1),
                     m));
}

TEST_F(MmuUpdateTest, IoFrameCanBeMappedWithMapForeignAndDomidIo)
{
    d->policy.allow(Perm::MapForeign);
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(Mfn{20}, P | US | A))}, &done, DOMID_IO), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(Mfn{20}, P | US | A))
                         .count(Mfn{20}, +1)
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1),
                     m));
}

TEST_F(MmuUpdateTest, ForeigndomNamingTheCallerItselfNeedsNoPrivilege)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_NORMAL_PT_UPDATE, map(600, kDataFlags | NX))}, &done, kDom), 0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

TEST_F(MmuUpdateTest, UpdatesIssuedFromAnyVcpuOfTheDomainWork)
{
    Snapshot before(m);
    unsigned done = 0;
    EXPECT_EQ(mmu_update({req(600, MMU_ATOMIC_PT_UPDATE, map(600, kDataFlags | NX))}, &done, DOMID_SELF,
                         &v1()),
              0);
    EXPECT_EQ(done, 1u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), map(600, kDataFlags | NX)), m));
}

} // namespace
} // namespace pvmmu::test
