// Host unit tests of the guest library on a fake platform (guest/fake_guest.h):
// what the planner sends at each feature level, batch splitting, the fallback
// after a refusal, exact get_and_clear, the frame allocator and the flush plan.
// The behaviour on a real (simulated) MMU is what the guest tests check.
#include <gtest/gtest.h>

#include "guest/change_pte_range.h"
#include "guest/pte_ops.h"
#include "guest/fake_guest.h"

namespace pvmmu::guest {
namespace {

constexpr uint64_t kL1 = 100;   // a table gpfn of the fake guest
constexpr unsigned rw = kProtRead | kProtWrite;

// Entries 0..99 and 120..511 map pages RW (dirty or not), 100..109 are holes,
// 110..119 are PROT_NONE pages.
void fill(fake::Platform& p)
{
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const uint64_t m = make_pte(Mfn{0x9000 + i}, 0);
        p.entry(kL1, i) = i >= 100 && i < 110 ? 0
                          : i >= 110 && i < 120 ? m | pte::US | pte::PROTNONE
                                                : m | pte::P | pte::RW | pte::US | pte::A | (i % 2 ? pte::D : 0);
    }
}

int change(fake::Guest1& f, unsigned prot, FlushPlan& plan)
{
    const PteRange r{Gpfn{kL1}, 0, kEntriesPerTable, Va{0x100'0000'0000}};
    return change_pte_range(f.c, r, prot, plan);
}

TEST(GuestPlanner, FlagRangeLevelSendsOneRangeAndCmd2ForProtNonePages)
{
    fake::Guest1 f;
    ASSERT_EQ(f.init_rc, 0);
    ASSERT_EQ(f.g.level(), MmuLevel::FlagRange);
    fill(f.p);
    f.p.requests.clear();
    FlushPlan plan(32);
    ASSERT_EQ(change(f, kProtRead, plan), 0);
    // Ten cmd-2 requests bring the PROT_NONE pages back, one cmd 4 does the rest.
    ASSERT_EQ(f.p.requests.size(), 11u);
    for (unsigned k = 0; k < 10; ++k) {
        EXPECT_EQ(f.p.requests[k].cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
        EXPECT_EQ(f.p.requests[k].index, 110 + k);
    }
    const fake::Request& r = f.p.requests[10];
    EXPECT_EQ(r.cmd, unsigned(MMU_FLAG_RANGE_UPDATE));
    EXPECT_EQ(r.index, 0u);
    EXPECT_EQ(r.val, abi::encode_flag_range(kProtBits, prot_to_bits(kProtRead) & kProtBits, kEntriesPerTable));
    EXPECT_EQ(f.p.mmu_calls, 1u);   // all eleven in one mmu_update
    EXPECT_EQ(plan.reduced(), 492u);
    EXPECT_TRUE(plan.whole());
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const uint64_t e = f.p.entry(kL1, i);
        if (i >= 100 && i < 110) EXPECT_EQ(e, 0u);
        else EXPECT_EQ(e & kProtBits, prot_to_bits(kProtRead) & kProtBits) << i;
    }
}

TEST(GuestPlanner, AtomicLevelSendsOneCmd2PerChangedEntryInBatches)
{
    fake::Guest1 f;
    f.p.features = 1u << XENFEAT_mmu_pt_update_preserve_ad;
    ASSERT_EQ(f.g.detect_features(f.c), 0);
    ASSERT_EQ(f.g.level(), MmuLevel::Atomic);
    fill(f.p);
    f.g.config.batch_ptes = 31;
    f.p.requests.clear();
    f.p.mmu_calls = 0;
    FlushPlan plan(32);
    ASSERT_EQ(change(f, kProtRead, plan), 0);
    EXPECT_EQ(f.p.requests.size(), 502u);
    EXPECT_EQ(f.p.mmu_calls, (502u + 30) / 31);
    for (const auto& r : f.p.requests) EXPECT_EQ(r.cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
    // Nothing to do the second time.
    f.p.requests.clear();
    ASSERT_EQ(change(f, kProtRead, plan), 0);
    EXPECT_TRUE(f.p.requests.empty());
}

// MmuBatch writes its requests through a stage of 32 (sim) or in place
// (Memory::direct): the same requests, hypercalls and counts either way, for
// caps below, at and across the stage's size.
TEST(GuestPlanner, AtomicBatchesAreTheSameStagedOrInPlace)
{
    for (const bool in_place : {false, true})
        for (const unsigned cap : {31u, 32u, 45u, 100u, 512u}) {
            SCOPED_TRACE(testing::Message() << (in_place ? "in place" : "staged") << ", cap " << cap);
            fake::Guest1 f;
            f.p.features = 1u << XENFEAT_mmu_pt_update_preserve_ad;
            f.p.in_place = in_place;
            ASSERT_EQ(f.g.detect_features(f.c), 0);
            fill(f.p);
            f.g.config.batch_ptes = cap;
            f.p.requests.clear();
            f.p.mmu_calls = 0;
            FlushPlan plan(32);
            ASSERT_EQ(change(f, kProtRead, plan), 0);
            ASSERT_EQ(f.p.requests.size(), 502u);
            EXPECT_EQ(f.p.mmu_calls, (502u + cap - 1) / cap);
            EXPECT_EQ(f.c.stats.req[MMU_ATOMIC_PT_UPDATE].get(), 502u);
            unsigned k = 0;
            for (unsigned i = 0; i < kEntriesPerTable; ++i) {
                if (i >= 100 && i < 110) continue;   // holes
                const fake::Request& r = f.p.requests[k++];
                EXPECT_EQ(r.cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
                EXPECT_EQ(r.index, i);
                EXPECT_EQ(r.val & kProtBits, prot_to_bits(kProtRead) & kProtBits);
            }
        }
}

TEST(GuestPlanner, NormalLevelClearsThenSetsAndAssumesDirtyForWritablePages)
{
    fake::Guest1 f;
    f.p.features = 0;
    ASSERT_EQ(f.g.detect_features(f.c), 0);
    ASSERT_EQ(f.g.level(), MmuLevel::Normal);
    fill(f.p);
    f.p.requests.clear();
    FlushPlan plan(32);
    ASSERT_EQ(change(f, kProtRead, plan), 0);
    EXPECT_EQ(f.p.requests.size(), 2u * 492 + 10);
    for (const auto& r : f.p.requests) EXPECT_EQ(r.cmd, unsigned(MMU_NORMAL_PT_UPDATE));
    for (unsigned i = 0; i < 100; ++i) EXPECT_TRUE(f.p.entry(kL1, i) & pte::D) << i;   // clean ones too
}

TEST(GuestPlanner, RefusedRangeDropsALevelAndRedoesTheL1)
{
    // The refused command is read back from the request in the scratch page,
    // whether the batch staged it or wrote it in place.
    for (const bool in_place : {false, true}) {
        SCOPED_TRACE(in_place ? "in place" : "staged");
        fake::Guest1 f;
        f.p.in_place = in_place;
        fill(f.p);
        f.p.refuse = MMU_FLAG_RANGE_UPDATE;
        FlushPlan plan(32);
        ASSERT_EQ(change(f, kProtRead, plan), 0);
        EXPECT_EQ(f.g.level(), MmuLevel::Atomic);
        EXPECT_EQ(f.c.stats.downgrades.get(), 1u);
        EXPECT_EQ(plan.reduced(), 492u);   // counted once, not once per attempt
        for (unsigned i = 120; i < kEntriesPerTable; ++i) EXPECT_FALSE(f.p.entry(kL1, i) & pte::RW) << i;
    }
}

// A stage that cannot be written (its scratch page faults) is dropped: the
// batch fails with -EFAULT before anything is issued, nothing is counted, and
// the next batch starts afresh.
TEST(GuestPlanner, AStageThatFaultsFailsTheBatchAndIssuesNothing)
{
    fake::Guest1 f;
    f.p.features = 1u << XENFEAT_mmu_pt_update_preserve_ad;
    ASSERT_EQ(f.g.detect_features(f.c), 0);
    fill(f.p);
    f.g.config.batch_ptes = 100;   // the second stage of 32 faults
    f.p.store_words_fault = 2;
    f.p.requests.clear();
    f.p.mmu_calls = 0;
    FlushPlan plan(32);
    EXPECT_EQ(change(f, kProtRead, plan), -XEN_EFAULT);
    EXPECT_EQ(f.p.mmu_calls, 0u);
    EXPECT_EQ(f.c.stats.req[MMU_ATOMIC_PT_UPDATE].get(), 0u);
    EXPECT_TRUE(f.p.entry(kL1, 0) & pte::RW);
    // A fault in a stage written by flush(): batch 4's last (4 remainders of 100 - 3 x 32).
    f.p.store_words_calls = 0;
    f.p.store_words_fault = 16;   // batches 1-4 write 4 stages each; the 16th is batch 4's last
    EXPECT_EQ(change(f, kProtRead, plan), -XEN_EFAULT);
    EXPECT_EQ(f.p.mmu_calls, 3u);
    EXPECT_EQ(f.c.stats.req[MMU_ATOMIC_PT_UPDATE].get(), 300u);
    // And without faults the rest is done.
    f.p.store_words_fault = 0;
    EXPECT_EQ(change(f, kProtRead, plan), 0);
    EXPECT_EQ(f.c.stats.req[MMU_ATOMIC_PT_UPDATE].get(), 502u);
    for (unsigned i = 120; i < kEntriesPerTable; ++i) EXPECT_FALSE(f.p.entry(kL1, i) & pte::RW) << i;
}

TEST(GuestPteOps, GetAndClearWithCmd2ReportsTheDirtyBitAndLeavesZero)
{
    for (bool xen : {false, true}) {   // the zeroing is cmd 0: exact under Xen's cmd 2 too
    SCOPED_TRACE(xen);
    fake::Guest1 f;
    f.p.xen_cmd2 = xen;
    const PteRef r{Gpfn{kL1}, 7};
    f.p.entry(kL1, 7) = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        ASSERT_EQ(ptep_get_and_clear(f.c, l, old), 0);
    }
    EXPECT_TRUE(old & pte::D);
    EXPECT_EQ(f.p.entry(kL1, 7), 0u);
    }
}

TEST(GuestPteOps, XchgOnTheSameFrameIsOneCmd2Install)
{
    fake::Guest1 f;
    const PteRef r{Gpfn{kL1}, 9};
    f.p.entry(kL1, 9) = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    f.p.requests.clear();
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        ASSERT_EQ(ptep_xchg(f.c, l, make_pte(Mfn{0x9000}, pte::P | pte::US), old), 0);
    }
    ASSERT_EQ(f.p.requests.size(), 1u);
    EXPECT_EQ(f.p.requests[0].cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
    EXPECT_EQ(old, make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D));
    EXPECT_EQ(f.p.entry(kL1, 9), make_pte(Mfn{0x9000}, pte::P | pte::US | pte::A | pte::D));   // kept with the page
}

// Another frame: cleared by cmd 2, which hands the old
// page's A/D back, then written by cmd 0 into the empty entry; the new entry
// is nv exactly, and `old` reports D even though nv carries D itself. The same
// under Xen's cmd 2, which would OR the handed-back A/D into a cmd-2 install
// (the guest test ptep-xchg-remap-dirty found the old page's D in the new entry).
TEST(GuestPteOps, XchgToAnotherFrameClearsThenSetsAndReportsTheOldPagesBits)
{
    for (bool xen : {false, true}) {
    SCOPED_TRACE(xen);
    fake::Guest1 f;
    f.p.xen_cmd2 = xen;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t before = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    for (uint64_t nv_flags : {pte::P | pte::RW | pte::US | pte::A | pte::D, pte::P | pte::US}) {
        f.p.entry(kL1, 9) = before;
        f.p.requests.clear();
        const uint64_t nv = make_pte(Mfn{0x9001}, nv_flags);
        uint64_t old = 0;
        {
            PteLock l(f.c, r);
            ASSERT_EQ(ptep_xchg(f.c, l, nv, old), 0);
        }
        ASSERT_EQ(f.p.requests.size(), 2u);
        EXPECT_EQ(f.p.requests[0].cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
        EXPECT_EQ(f.p.requests[0].val, 0u);
        EXPECT_EQ(f.p.requests[1].cmd, unsigned(MMU_NORMAL_PT_UPDATE));
        EXPECT_EQ(f.p.requests[1].val, nv);
        EXPECT_EQ(old, before);
        EXPECT_EQ(f.p.entry(kL1, 9), nv);
    }
    }
}

// To a non-present value (a swap entry): the same two steps; the entry ends
// holding the swap entry bit for bit.
TEST(GuestPteOps, XchgToASwapEntryReportsTheOldBitsAndStoresItExactly)
{
    fake::Guest1 f;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t before = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    f.p.entry(kL1, 9) = before;
    const uint64_t swap = 0x0000'0012'3400'0000ull | pte::D;   // not present, bit 6 its own
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        ASSERT_EQ(ptep_xchg(f.c, l, swap, old), 0);
    }
    EXPECT_EQ(old, before);
    EXPECT_EQ(f.p.entry(kL1, 9), swap);
}

// A refused new value: the entry had been cleared to hand
// the A/D back and then stayed non-present holding only them (a swap entry to
// the guest), the old page's D dropped with ptep_cmpxchg's result. Now the old
// mapping goes back with the D that hardware set after the caller's read, and
// both operations report it.
constexpr Mfn kRefused{0x9100};   // a frame the fake hypervisor will not map

bool maps_refused(unsigned, uint64_t val) { return pte_present(val) && pte_mfn(val).v == kRefused.v; }

TEST(GuestPteOps, XchgToARefusedFrameLeavesTheOldMappingAndReportsItsDirtyBit)
{
    fake::Guest1 f;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t clean = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A);
    f.p.refuse_val = maps_refused;
    for (bool cmpxchg : {false, true}) {
        f.p.entry(kL1, 9) = clean;
        // The page is written after the caller read the entry, before the clear.
        bool wrote = false;
        f.p.before_mmu_update = [&] {
            if (!wrote) f.p.entry(kL1, 9) |= pte::D;
            wrote = true;
        };
        const uint64_t nv = make_pte(kRefused, pte::P | pte::US);
        uint64_t old = 0, seen = 0;
        bool swapped = true;
        {
            PteLock l(f.c, r);
            if (cmpxchg) EXPECT_EQ(ptep_cmpxchg(f.c, l, clean, nv, seen, swapped), -XEN_EPERM);
            else EXPECT_EQ(ptep_xchg(f.c, l, nv, old), -XEN_EPERM);
        }
        EXPECT_EQ(f.p.entry(kL1, 9), clean | pte::D) << cmpxchg;
        if (cmpxchg) {
            EXPECT_FALSE(swapped);
            EXPECT_EQ(seen, clean | pte::D);
        } else {
            EXPECT_EQ(old, clean | pte::D);
        }
    }
    EXPECT_EQ(f.g.level(), MmuLevel::FlagRange);   // a refused value is not a refused command
}

// If the old mapping is refused too, the entry is left empty, not holding the
// bare A/D bits; `old` is then their only record.
TEST(GuestPteOps, XchgWhoseOldMappingIsRefusedTooLeavesTheEntryEmpty)
{
    fake::Guest1 f;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t before = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    f.p.entry(kL1, 9) = before;
    f.p.refuse_val = [](unsigned, uint64_t val) { return pte_present(val); };
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        EXPECT_EQ(ptep_xchg(f.c, l, make_pte(kRefused, pte::P | pte::US), old), -XEN_EPERM);
    }
    EXPECT_EQ(old, before);
    EXPECT_EQ(f.p.entry(kL1, 9), 0u);
}

// At the Normal level (no cmd 2) the fallback clears with cmd 0 and cannot know
// the A/D bits; a refused value puts the old mapping back as assumed: accessed,
// and dirty since it is writable.
TEST(GuestPteOps, NormalLevelXchgToARefusedFrameLeavesTheOldMappingAsAssumed)
{
    fake::Guest1 f;
    f.p.features = 0;
    ASSERT_EQ(f.g.detect_features(f.c), 0);
    ASSERT_EQ(f.g.level(), MmuLevel::Normal);
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t clean = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US);
    f.p.entry(kL1, 9) = clean;
    f.p.refuse_val = maps_refused;
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        EXPECT_EQ(ptep_xchg(f.c, l, make_pte(kRefused, pte::P | pte::US), old), -XEN_EPERM);
    }
    EXPECT_EQ(old, clean | pte::A | pte::D);
    EXPECT_EQ(f.p.entry(kL1, 9), clean | pte::A | pte::D);
}

// A domain allowed cmd 2 but not cmd 0: the second write of a move to another
// frame, and the zeroing after an exact get_and_clear, are cmd 2 as well once
// cmd 0 is refused (pvmmu's cmd 2 installs the value exactly over a non-present
// entry); only the refused attempts are cmd 0.
TEST(GuestPteOps, XchgToAnotherFrameNeedsNoCmd0)
{
    fake::Guest1 f;
    f.p.refuse = MMU_NORMAL_PT_UPDATE;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t before = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    f.p.entry(kL1, 9) = before;
    const uint64_t nv = make_pte(Mfn{0x9001}, pte::P | pte::RW | pte::US);
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        EXPECT_EQ(ptep_xchg(f.c, l, nv, old), 0);
    }
    EXPECT_EQ(old, before);
    EXPECT_EQ(f.p.entry(kL1, 9), nv);
    for (const fake::Request& q : f.p.requests)
        EXPECT_TRUE(q.cmd == MMU_NORMAL_PT_UPDATE || q.cmd == MMU_ATOMIC_PT_UPDATE) << q.cmd;
    EXPECT_EQ(f.p.requests.back().cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
}

TEST(GuestPteOps, GetAndClearNeedsNoCmd0)
{
    fake::Guest1 f;
    f.p.refuse = MMU_NORMAL_PT_UPDATE;
    const PteRef r{Gpfn{kL1}, 9};
    const uint64_t before = make_pte(Mfn{0x9000}, pte::P | pte::RW | pte::US | pte::A | pte::D);
    f.p.entry(kL1, 9) = before;
    uint64_t old = 0;
    {
        PteLock l(f.c, r);
        EXPECT_EQ(ptep_get_and_clear(f.c, l, old), 0);
    }
    EXPECT_EQ(old, before);
    EXPECT_EQ(f.p.entry(kL1, 9), 0u);
    for (const fake::Request& q : f.p.requests)
        EXPECT_TRUE(q.cmd == MMU_NORMAL_PT_UPDATE || q.cmd == MMU_ATOMIC_PT_UPDATE) << q.cmd;
    EXPECT_EQ(f.p.requests.back().cmd, unsigned(MMU_ATOMIC_PT_UPDATE));
}

// A physmap write fault on an entry that is writable is a stale TLB entry and
// is fixed by a local flush — but not forever: a page that keeps faulting on
// one vCPU is read-only above its L1 entry, and the access must fail, not loop.
TEST(GuestFaults, PhysmapFixupIsBoundedPerPage)
{
    fake::Guest1 f;
    ASSERT_EQ(f.init_rc, 0);
    const Gpfn a{50}, b{51};
    for (const Gpfn g : {a, b}) {
        const PteRef r = f.g.physmap_pte(g);
        f.p.entry(r.table.v, r.index) = make_pte(Mfn{fake::Platform::kFirstMfn.v + g.v}, pte::P | pte::RW);
    }
    const auto fault = [&](Gpfn g) {
        return f.g.handle_fault(f.c, FaultInfo{Va{fake::Platform::kPhysmap.v + (g.v << kPageShift) + 8},
                                               Access::Write, true});
    };
    for (unsigned i = 0; i < Guest::kMaxPhysmapFixes; ++i) ASSERT_TRUE(fault(a)) << i;
    EXPECT_FALSE(fault(a));
    EXPECT_EQ(f.c.stats.spurious_write.get(), Guest::kMaxPhysmapFixes);
    EXPECT_TRUE(fault(b));   // another page starts a new count
    EXPECT_TRUE(fault(a));
}

TEST(GuestFrames, ContiguousRunsReuseTheLowestFreedFrameAndRefuseWhenFull)
{
    fake::Guest1 f;
    FrameAllocator& a = f.g.frames();
    const uint64_t free0 = a.nr_free();
    Gpfn x, y, z;
    ASSERT_TRUE(a.alloc(f.c, 3, x));
    ASSERT_TRUE(a.alloc(f.c, 1, y));
    EXPECT_EQ(y.v, x.v + 3);
    a.free(f.c, Gpfn{x.v + 1});
    ASSERT_TRUE(a.alloc(f.c, 1, z));
    EXPECT_EQ(z.v, x.v + 1);
    EXPECT_FALSE(a.reserve(f.c, x, 1));
    EXPECT_FALSE(a.alloc(f.c, unsigned(free0), z));
    a.free(f.c, x, 3);
    a.free(f.c, y);
    a.free(f.c, y);   // a double free changes nothing
    EXPECT_EQ(a.nr_free(), free0);
}

TEST(GuestFlushPlan, PagesUpToTheThresholdThenTheWholeTlb)
{
    FlushPlan p(2);
    EXPECT_TRUE(p.empty());
    p.add(Va{0x1000});
    p.add(Va{0x2000});
    EXPECT_FALSE(p.whole());
    EXPECT_EQ(p.pages(), 2u);
    p.add(Va{0x3000});
    EXPECT_TRUE(p.whole());
    EXPECT_EQ(p.reduced(), 3u);
}

TEST(GuestPte, ModifyKeepsFrameAndAccessedDirtyAndReductionsAreRecognised)
{
    const uint64_t e = make_pte(Mfn{77}, pte::P | pte::RW | pte::US | pte::A | pte::D | pte::AVL10);
    const uint64_t ro = pte_modify(e, kProtRead);
    EXPECT_EQ(pte_mfn(ro).v, 77u);
    EXPECT_EQ(ro & (pte::AD | pte::AVL10), pte::AD | pte::AVL10);
    EXPECT_TRUE(pte_reduces(e, ro));
    EXPECT_FALSE(pte_reduces(ro, pte_modify(ro, rw | kProtExec)));
    EXPECT_TRUE(pte_reduces(e, pte_modify(e, kProtNone)));
    EXPECT_FALSE(pte_present(pte_modify(e, kProtNone)));
}


// Xen's start of day: frames from anywhere, named by the P2M and
// inverted with the M2P, and only the boot region mapped. The library maps
// the rest of the physmap itself: a new L1 linked into the builder's L2,
// every entry naming its gpfn's frame with the builder's flags.
TEST(GuestStartOfDay, XenLayoutMapsTheRestOfThePhysmap)
{
    fake::Guest1 f(true);
    ASSERT_EQ(f.init_rc, 0);
    const uint64_t l2e = f.p.entry(fake::Platform::kL2, 1);
    ASSERT_TRUE(pte_present(l2e));
    Gpfn l1;
    ASSERT_TRUE(f.g.gpfn_of(pte_mfn(l2e), l1));
    EXPECT_GE(l1.v, fake::Platform::kPtFrames);
    EXPECT_LT(l1.v, kEntriesPerTable);   // a frame the boot region maps, so it could be zeroed
    const uint64_t builder_flags = f.p.entry(fake::Platform::kFirstL1, 100) & ~pte::ADDR;
    for (uint64_t g = 0; g < fake::Platform::kFrames; ++g) {
        ASSERT_EQ(f.g.mfn(Gpfn{g}), f.p.mfn(g)) << g;
        Gpfn back;
        ASSERT_TRUE(f.g.gpfn_of(f.p.mfn(g), back)) << g;
        EXPECT_EQ(back.v, g);
        const PteRef r = f.g.physmap_pte(Gpfn{g});
        if (g < kEntriesPerTable) continue;
        ASSERT_EQ(r.table, l1) << g;
        EXPECT_EQ(f.p.entry(l1.v, r.index), make_pte(f.p.mfn(g), builder_flags)) << g;
    }
    // The new L1's own physmap entry is read-only, as a table's must be.
    const PteRef own = f.g.physmap_pte(l1);
    EXPECT_EQ(f.p.entry(own.table.v, own.index) & pte::RW, 0u);
    Gpfn none;
    EXPECT_FALSE(f.g.gpfn_of(Mfn{fake::Platform::kFirstMfn.v - 1}, none));   // not in the M2P
    EXPECT_FALSE(f.g.gpfn_of(Mfn{fake::Platform::kFirstMfn.v + fake::Platform::kFrames}, none));
}

// pvmmu's builder gives the same P2M list, but contiguous: the library finds
// its L1s by the walk and maps nothing.
TEST(GuestStartOfDay, PvmmuLayoutNeedsNoMapping)
{
    fake::Guest1 f;
    ASSERT_EQ(f.init_rc, 0);
    EXPECT_EQ(f.p.mmu_calls, 0u);
    EXPECT_EQ(f.g.physmap_pte(Gpfn{600}).table.v, fake::Platform::kFirstL1 + 1);
}

} // namespace
} // namespace pvmmu::guest
