// The core's half of Xen's "writable page tables" (core/pt_write.h): a guest
// kernel's write to one entry of its own L1, done as the instruction would
// have done it, with mmu_update cmd 0's checks and reference changes, and no
// A/D bit that hardware sets meanwhile lost — including by real threads
// racing a hardware-like setter. Refusals first.
#include <thread>
#include <utility>

#include "core/pt_write.h"
#include "invariants/invariant_check.h"
#include "support/core_fixture.h"
#include "support/race_at.h"

namespace pvmmu::test {
namespace {

using PtWriteTest = CoreTest;

PtWrite store(uint64_t v) { return PtWrite{PtWriteOp::Store, v, ~0ull, 0}; }
PtWrite and_(uint64_t v) { return PtWrite{PtWriteOp::And, v, 0, 0}; }
PtWrite or_(uint64_t v) { return PtWrite{PtWriteOp::Or, v, 0, 0}; }
PtWrite cmpxchg(uint64_t expect, uint64_t v) { return PtWrite{PtWriteOp::Cmpxchg, v, 0, expect}; }

TEST_F(PtWriteTest, WritesOutsideAnL1OfTheCallerAreRefusedAndChangeNothing)
{
    Snapshot before(m);
    uint64_t old = 7;
    // The L2 and L4 in use, a data frame, a frame beyond memory, an index past the table.
    EXPECT_EQ(emulate_l1_write(hv(), kDom, l2(), 0, store(0), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, l4(), 0, store(0), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, lay.mfn(600), 0, store(0), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, Mfn{kMachineFrames + 5}, 0, store(0), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), kEntriesPerTable, store(0), old), -XEN_EINVAL);
    // Domain 1's L1, written for another domain.
    EXPECT_EQ(emulate_l1_write(hv(), 2, l1_of(600), idx(600), store(0), old), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

// The write is mmu_update cmd 0's, so its permission gates it (the guest keeps its #PF).
TEST_F(PtWriteTest, ADomainDeniedNormalUpdatesIsRefusedAndNothingChanges)
{
    hv().domain(kDom)->policy.deny(Perm::MmuNormal);
    Snapshot before(m);
    uint64_t old = 0;
    EXPECT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(map(601, P | RW)), old), -XEN_EPERM);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), and_(~RW), old), -XEN_EPERM);
    EXPECT_TRUE(unchanged(before, m));
}

TEST_F(PtWriteTest, EntriesThatMmuUpdateRefusesAreRefusedAndChangeNothing)
{
    make_read_only(601);
    Snapshot before(m);
    uint64_t old = 0;
    const unsigned i = idx(600);
    const Mfn t = l1_of(600);
    // A table, writable.
    EXPECT_EQ(emulate_l1_write(hv(), kDom, t, i, store(map(l2(), kDataFlags)), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, t, i, store(map(600, kDataFlags | PCD)), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_l1_write(hv(), kDom, t, i, store(map(Mfn{1}, P | US)), old), -XEN_EPERM);   // the hypervisor's
    EXPECT_EQ(emulate_l1_write(hv(), kDom, t, i, or_(PCD), old), -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
}

// The address, in the physmap, of the entry for gpfn g in the L1 that maps it.
Vaddr entry_va(const DomainLayout& lay, uint64_t g)
{
    return Vaddr{lay.va(lay.l1_gpfn(g)).v + (g % kEntriesPerTable) * sizeof(uint64_t)};
}

// The domain maps its L2, L3 and L4 read-only, as it maps its L1s: a write
// faulting there reaches a table of the wrong level, which HeldL1 refuses
// before it takes any reference.
TEST_F(PtWriteTest, AnAddressMappingATableAboveL1IsRefusedAndChangesNothing)
{
    Snapshot before(m);
    uint64_t old = 0;
    // L4, L3, L2: the entry of each that links the physmap's next table, present and writable.
    constexpr std::pair<uint64_t, Level> kTables[] = {{0, Level::L4}, {1, Level::L3}, {2, Level::L2}};
    for (const auto& [g, lv] : kTables) {
        const unsigned i = table_index(lay.va(0), lv);
        ASSERT_NE(table(lay.mfn(g))[i] & RW, 0u);
        const Vaddr at{lay.va(g).v + i * sizeof(uint64_t)};
        EXPECT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), -XEN_EINVAL) << "gpfn " << g;
        EXPECT_EQ(emulate_pt_write(hv(), v0(), at, store(0), old), -XEN_EINVAL) << "gpfn " << g;
    }
    EXPECT_TRUE(unchanged(before, m));
}

// An L4 slot the hypervisor reserves (256..271) is refused before the walk,
// even where the domain's L4 holds (by a write the core never made) a link
// that would lead to one of its L1s.
TEST_F(PtWriteTest, AnAddressInAReservedL4SlotIsRefusedAndChangesNothing)
{
    uint64_t* const l4t = table(l4());
    const uint64_t saved = l4t[256];
    l4t[256] = l4t[table_index(lay.va(0), Level::L4)];
    const Vaddr at{0xffff'8000'0000'0000ull + (lay.va(lay.l1_gpfn(600)).v & ((1ull << 39) - 1)) +
                   idx(600) * sizeof(uint64_t)};
    ASSERT_EQ(table_index(at, Level::L4), 256u);
    ASSERT_TRUE(hv().l4_slot_reserved(256));
    Snapshot before(m);
    uint64_t old = 0;
    EXPECT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), -XEN_EINVAL);
    EXPECT_EQ(emulate_pt_write(hv(), v0(), Vaddr{at.v + (15ull << 39)}, and_(~RW), old), -XEN_EINVAL);   // slot 271
    EXPECT_TRUE(unchanged(before, m));
    l4t[256] = saved;
}

// A PS entry above L1 maps a superpage: the walk stops there, and its frame
// is not taken for the next table. Each entry is set in the table's memory
// directly (validation never lets one in).
TEST_F(PtWriteTest, ASuperpageEntryOnTheWalkIsRefusedAndChangesNothing)
{
    const Vaddr at = entry_va(lay, 600);
    for (const Mfn t : {l2(), l3()}) {
        const Level lv = t == l2() ? Level::L2 : Level::L3;
        uint64_t& e = table(t)[table_index(at, lv)];
        const uint64_t saved = e;
        ASSERT_EQ(saved & PS, 0u);
        e = saved | PS;
        Snapshot before(m);
        uint64_t old = 0;
        EXPECT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), -XEN_EINVAL) << "PS at L" << unsigned(lv);
        EXPECT_TRUE(unchanged(before, m)) << "PS at L" << unsigned(lv);
        e = saved;
    }
    // Without the PS bits the same write is done.
    uint64_t old = 0;
    EXPECT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), 0);
}

// Domain 1's L1 maps (by a write the core never made) domain 2's L1 where a
// data frame was: a write faulting there reaches a validated L1 that domain 1
// does not own, and HeldL1's owner check refuses it.
TEST_F(PtWriteTest, AnL1OfAnotherDomainIsRefusedAndChangesNothing)
{
    DomainLayout lay2;
    ASSERT_NE(m.create_domain(2, 64, 1, lay2), nullptr);
    const Mfn other = lay2.mfn(lay2.first_l1);
    const uint64_t g2 = 10;   // a data frame of domain 2, mapped writable
    ASSERT_GE(g2, lay2.first_pt + lay2.nr_pt_frames);
    ASSERT_NE(table(other)[g2] & RW, 0u);
    ASSERT_EQ(frame(other).owner.load(), DomId{2});
    const uint64_t saved = *pte(100);
    *pte(100) = map(other, P | US | A);
    Snapshot before(m);
    uint64_t old = 0;
    EXPECT_EQ(emulate_pt_write(hv(), v0(), Vaddr{lay.va(100).v + g2 * sizeof(uint64_t)}, and_(~RW), old),
              -XEN_EINVAL);
    EXPECT_TRUE(unchanged(before, m));
    *pte(100) = saved;
}

// The L1's last type reference other than the write's own goes at the
// instant the write is computed (its L2 entry cleared by mmu_update on
// another CPU): the write is installed under the reference HeldL1 holds, and
// HeldL1's drop is then the last one, which devalidates the table (every
// entry's references dropped). The checker finds the counts consistent.
TEST_F(PtWriteTest, TheWritesDropBeingTheLastDevalidatesTheL1)
{
    const Mfn t = l1_of(600);
    const unsigned link = unsigned(lay.l1_gpfn(600) - lay.first_l1);   // its entry in the L2
    ASSERT_EQ(Pte{table(l2())[link]}.mfn(), t);
    ASSERT_EQ(frame(t).type_count(), 1u);   // the L2's link only: not pinned
    ASSERT_NE(*pte(601) & RW, 0u);
    ASSERT_EQ(frame(lay.mfn(601)).type_count(), 1u);
    const uint64_t was = *pte(600);
    const uint32_t count601 = frame(lay.mfn(601)).count.load();
    uint64_t old = 0;
    {
        RaceAt unlink(hv(), RacePoint::PtWriteComputed, t, [&] {
            EXPECT_EQ(frame(t).type_count(), 2u);   // the link's and the write's
            unsigned done = 0;
            EXPECT_EQ(mmu_update({mmu_update_t{ptr(l2(), link, MMU_NORMAL_PT_UPDATE), 0}}, &done), 0);
            EXPECT_EQ(frame(t).type_count(), 1u);   // the write's only
        });
        EXPECT_EQ(emulate_pt_write(hv(), v0(), entry_va(lay, 600), and_(~RW), old), 0);
        EXPECT_TRUE(unlink.fired());
    }
    EXPECT_EQ(old, was);
    EXPECT_EQ(*pte(600), was & ~RW);
    EXPECT_EQ(table(l2())[link], 0u);
    EXPECT_EQ(frame(t).type_count(), 0u);
    EXPECT_EQ(frame(t).type_info.load() & (ti::kValidated | ti::kBusy), 0u);
    // Devalidated: 601's writable mapping gave back its type reference and its reference.
    EXPECT_EQ(frame(lay.mfn(601)).type_count(), 0u);
    EXPECT_EQ(frame(lay.mfn(601)).count.load(), count601 - 1);
    EXPECT_EQ(frame(lay.mfn(600)).type_count(), 0u);
    EXPECT_TRUE(invariants_hold(m));
}

// The #PF path's entry point: a write faulting at the address where the
// domain's own tables map one of its L1s (read-only, as a PV kernel maps
// them) writes the entry at that offset; an address they map to a data frame
// or to nothing, or a domain denied cmd 0, changes nothing.
TEST_F(PtWriteTest, AFaultingAddressWritesTheL1EntryItsTablesMapItTo)
{
    const Vaddr at{lay.va(3 + 600 / kEntriesPerTable).v + idx(600) * sizeof(uint64_t)};
    {
        Snapshot before(m);
        uint64_t old = 0;
        EXPECT_EQ(emulate_pt_write(hv(), v0(), lay.va(600), and_(~RW), old), -XEN_EINVAL);
        EXPECT_EQ(emulate_pt_write(hv(), v0(), lay.va(5000), and_(~RW), old), -XEN_EINVAL);
        hv().domain(kDom)->policy.deny(Perm::MmuNormal);
        EXPECT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), -XEN_EPERM);
        hv().domain(kDom)->policy.allow(Perm::MmuNormal);
        EXPECT_TRUE(unchanged(before, m));
    }
    Snapshot before(m);
    const uint64_t was = *pte(600);
    uint64_t old = 0;
    ASSERT_EQ(emulate_pt_write(hv(), v0(), at, and_(~RW), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), was & ~RW).type_count(lay.mfn(600), -1), m));
}

TEST_F(PtWriteTest, StoreMapsAFrameWithCmd0sReferences)
{
    Snapshot before(m);
    uint64_t old = 0;
    const uint64_t was = *pte(600);
    // Entry 600 now maps frame 601 (writable): 600 loses a mapping, 601 gains one.
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(map(601, P | RW)), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_TRUE(only(Changes(before)
                         .word(l1_of(600), idx(600), map(601, P | RW | US))   // US added, as mmu_update does
                         .count(lay.mfn(600), -1)
                         .type_count(lay.mfn(600), -1)
                         .count(lay.mfn(601), +1)
                         .type_count(lay.mfn(601), +1),
                     m));
}

TEST_F(PtWriteTest, HalfStoreMergesIntoTheEntry)
{
    const uint64_t was = *pte(600);
    uint64_t old = 0;
    // MOV of the low half: RW cleared, the frame bits above 32 kept (none here).
    const PtWrite w{PtWriteOp::Store, uint32_t(was & ~RW), 0xffffffffull, 0};
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), w, old), 0);
    EXPECT_EQ(*pte(600), was & ~RW);
    EXPECT_EQ(ti::count(frame(lay.mfn(600)).type_info.load()), 0u);   // the writable type reference dropped
}

TEST_F(PtWriteTest, XchgReturnsTheAdBitsHardwareSetBefore)
{
    std::atomic_ref<uint64_t>(*pte(600)).fetch_or(D);   // "hardware"
    const uint64_t was = *pte(600);
    uint64_t old = 0;
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(0), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_EQ(old & (A | D), A | D);
    EXPECT_EQ(*pte(600), 0u);
}

TEST_F(PtWriteTest, CmpxchgWritesOnlyOnAMatch)
{
    const uint64_t was = *pte(600);
    Snapshot before(m);
    uint64_t old = 0;
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), cmpxchg(was ^ A, was | NX), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_TRUE(unchanged(before, m));
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), cmpxchg(was, was | NX), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), was | NX), m));
}

TEST_F(PtWriteTest, BitClearReturnsTheOldBit)
{
    const uint64_t was = *pte(600);
    ASSERT_NE(was & A, 0u);
    uint64_t old = 0;
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), and_(~A), old), 0);
    EXPECT_EQ(old, was);
    EXPECT_EQ(*pte(600), was & ~A);
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), and_(~A), old), 0);
    EXPECT_EQ(old & A, 0u);
}

// Hardware sets D between the read and the install: the write is computed
// again from the entry with D, so an exchange hands D back and a bit clear
// keeps it. An install of the value computed before (cmd 0's overwrite)
// would lose it.
TEST_F(PtWriteTest, DirtySetBetweenReadAndInstallIsHandedBackOrKept)
{
    std::atomic_ref<uint64_t> e(*pte(600));
    const uint64_t was = e.load();
    ASSERT_EQ(was & D, 0u);
    uint64_t old = 0;
    {
        RaceAt hw(hv(), RacePoint::PtWriteComputed, l1_of(600), [&] { e.fetch_or(D); });
        ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(0), old), 0);
        EXPECT_TRUE(hw.fired());
    }
    EXPECT_EQ(old, was | D);   // XCHG's result: the real old value
    EXPECT_EQ(e.load(), 0u);
    ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(was), old), 0);
    {
        RaceAt hw(hv(), RacePoint::PtWriteComputed, l1_of(600), [&] { e.fetch_or(D); });
        ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), and_(~A), old), 0);   // LOCK BTR $5
        EXPECT_TRUE(hw.fired());
    }
    EXPECT_EQ(old, was | D);
    EXPECT_EQ(e.load(), (was | D) & ~A);
    EXPECT_EQ(hv().install_retries(), 2u);
}

// A change that is not hardware's A/D between the read and the install is
// not waited out (as install_entry_contended): -EBUSY, the write not done,
// no reference changed, the entry as the other writer left it.
TEST_F(PtWriteTest, ANonAdChangeBetweenReadAndInstallIsEbusyAndNothingIsWritten)
{
    constexpr uint64_t kSw = 1ull << 9;
    std::atomic_ref<uint64_t> e(*pte(600));
    const uint64_t was = e.load();
    ASSERT_EQ(was & kSw, 0u);
    Snapshot before(m);
    uint64_t old = 0;
    {
        RaceAt other(hv(), RacePoint::PtWriteComputed, l1_of(600), [&] { e.fetch_or(kSw); });
        EXPECT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(map(601, P | RW)), old), -XEN_EBUSY);
        EXPECT_TRUE(other.fired());
    }
    EXPECT_EQ(e.load(), was | kSw);
    EXPECT_EQ(hv().install_retries(), 0u);
    EXPECT_TRUE(only(Changes(before).word(l1_of(600), idx(600), was | kSw), m));
}

// Real threads: a CPU's walker sets D whenever the entry lacks it, the
// emulated exchanges (and bit changes between them) clear it. Every D the
// walker set is either handed back by exactly one exchange or still in the
// entry: none lost, none counted twice.
TEST_F(PtWriteTest, EveryDirtyBitHardwareSetsIsHandedBackOnce)
{
    constexpr uint64_t kSw = 1ull << 9;
    constexpr int kRounds = 20000;
    std::atomic_ref<uint64_t> e(*pte(600));
    const uint64_t base = e.load() & ~(A | D);
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> sets{0};
    std::thread hw([&] {
        while (!stop.load(std::memory_order_relaxed))
            if (!(e.fetch_or(D, std::memory_order_acq_rel) & D)) sets.fetch_add(1, std::memory_order_relaxed);
    });
    while (sets.load(std::memory_order_relaxed) == 0)   // the walker runs
        std::this_thread::yield();
    uint64_t handed_back = 0, old = 0;
    for (int r = 0; r < kRounds; ++r) {
        ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), or_(kSw), old), 0);
        ASSERT_EQ(emulate_l1_write(hv(), kDom, l1_of(600), idx(600), store(base), old), 0);
        if (old & D) ++handed_back;
    }
    stop = true;
    hw.join();
    EXPECT_EQ(sets.load(), handed_back + ((e.load() & D) ? 1 : 0));
    EXPECT_GT(handed_back, 0u);
}

} // namespace
} // namespace pvmmu::test
