// The simulated machine's walker and TLB behave as x86 hardware: A on access, D on
// write, each set in the live entry; permissions cached with the translation.
#include <gtest/gtest.h>

#include "core/pagetable.h"
#include "sim/guest_context.h"

namespace pvmmu::sim {
namespace {

struct WalkerTest : ::testing::Test {
    Machine m{MachineConfig{.cpus = 2, .frames = 4096}};
    DomainLayout lay;
    Domain* d = m.create_domain(1, 1024, 2, lay);
    // gpfn 600 is a data page; its L1 entry lives in the second L1.
    static constexpr uint64_t kPage = 600;
    uint64_t* pte() { return entry(kPage); }
    uint64_t* entry(uint64_t gpfn) { return m.hv().mem().table(lay.mfn(lay.l1_gpfn(gpfn))) + gpfn % 512; }
    void* host(uint64_t gpfn) { return m.hv().mem().frame(lay.mfn(gpfn)); }
};

TEST_F(WalkerTest, ReadSetsAccessedOnlyAndWriteSetsDirty)
{
    ASSERT_NE(d, nullptr);
    GuestContext g(m, d->vcpus[0]);
    // The builder sets A; clear both to watch the walker.
    std::atomic_ref<uint64_t>(*pte()).fetch_and(~pte_bit::AD);
    uint64_t v = 1;
    ASSERT_TRUE(g.load(lay.va(kPage), v));
    EXPECT_EQ(*pte() & pte_bit::AD, pte_bit::A);
    ASSERT_TRUE(g.store(lay.va(kPage), 42));
    EXPECT_EQ(*pte() & pte_bit::AD, pte_bit::AD);
    EXPECT_EQ(g.counters().d_set, 1u);
    ASSERT_TRUE(g.load(lay.va(kPage), v));
    EXPECT_EQ(v, 42u);
}

TEST_F(WalkerTest, PageTablesAreReadOnlyToTheGuest)
{
    GuestContext g(m, d->vcpus[0]);
    uint64_t v;
    ASSERT_TRUE(g.load(lay.va(0), v));
    Fault f;
    EXPECT_FALSE(g.try_access(lay.va(0), Access::Write, f));
    EXPECT_TRUE(f.present);
    EXPECT_FALSE(g.store(lay.va(0), 0));
}

TEST_F(WalkerTest, StaleTlbEntryKeepsWorkingUntilFlushed)
{
    GuestContext g(m, d->vcpus[0]);
    ASSERT_TRUE(g.store(lay.va(kPage), 1));   // caches a writable, dirty entry
    // Lower RW with cmd 2; the request array lives in guest memory (gpfn 700).
    const uint64_t ma = uint64_t(reinterpret_cast<uint8_t*>(pte()) - m.hv().mem().base);
    const mmu_update_t req{ma | MMU_ATOMIC_PT_UPDATE, *pte() & ~pte_bit::RW};
    ASSERT_TRUE(g.write_bytes(lay.va(700), &req, sizeof(req)));
    ASSERT_EQ(g.hypercall(__HYPERVISOR_mmu_update, lay.va(700).v, 1, 0, DOMID_SELF), 0);
    EXPECT_FALSE(*pte() & pte_bit::RW);
    // No flush yet: the stale writable entry still works, as on hardware.
    EXPECT_TRUE(g.store(lay.va(kPage), 2));
    mmuext_op_t op{};
    op.cmd = MMUEXT_INVLPG_LOCAL;
    op.arg1.linear_addr = lay.va(kPage).v;
    ASSERT_TRUE(g.write_bytes(lay.va(701), &op, sizeof(op)));
    ASSERT_EQ(g.hypercall(__HYPERVISOR_mmuext_op, lay.va(701).v, 1, 0, DOMID_SELF), 0);
    Fault f;
    EXPECT_FALSE(g.try_access(lay.va(kPage), Access::Write, f));
    EXPECT_TRUE(f.present);
    EXPECT_FALSE(f.from_tlb);
}

TEST_F(WalkerTest, ShootdownReachesTheOtherVcpu)
{
    std::atomic<int> phase{0};
    m.run(*d, [&](GuestContext& g) {
        if (g.vcpu().id == 1) {
            ASSERT_TRUE(g.store(lay.va(kPage), 7));   // cache a writable entry
            phase.store(1);
            while (phase.load() != 2) g.poll();
            Fault f;
            EXPECT_FALSE(g.try_access(lay.va(kPage), Access::Write, f)) << "stale writable entry survived";
            EXPECT_TRUE(f.present);
            return;
        }
        while (phase.load() != 1) g.poll();
        // Write the lowered entry from guest memory via update_va_mapping + flush all.
        const long rc = g.hypercall(__HYPERVISOR_update_va_mapping, lay.va(kPage).v, *pte() & ~pte_bit::RW,
                                    UVMF_INVLPG | UVMF_ALL);
        EXPECT_EQ(rc, 0);
        phase.store(2);
    });
    EXPECT_EQ(m.counters(1).shootdowns_served, 1u);
    EXPECT_EQ(m.counters(0).shootdowns_sent, 1u);
}

// GuestContext::direct: the pages translated once, as a first store to each
// would be, and a pointer to machine memory the guest and hypervisor both see.
TEST_F(WalkerTest, DirectSetsAccessedAndDirtyOnEveryPage)
{
    GuestContext g(m, d->vcpus[0]);
    for (uint64_t p : {kPage, kPage + 1}) std::atomic_ref<uint64_t>(*entry(p)).fetch_and(~pte_bit::AD);
    uint64_t* p = g.direct(lay.va(kPage), 2 * kPageSize);
    ASSERT_EQ(static_cast<void*>(p), host(kPage));
    EXPECT_EQ(*entry(kPage) & pte_bit::AD, pte_bit::AD);
    EXPECT_EQ(*entry(kPage + 1) & pte_bit::AD, pte_bit::AD);
    EXPECT_EQ(g.counters().d_set, 2u);
    EXPECT_EQ(g.counters().faults, 0u);
    // Cached writable and dirty: again, nothing more to set.
    EXPECT_EQ(g.direct(lay.va(kPage), 2 * kPageSize), p);
    EXPECT_EQ(g.counters().d_set, 2u);
}

TEST_F(WalkerTest, DirectWritesAreWhatLoadsAndTheHypervisorSee)
{
    GuestContext g(m, d->vcpus[0]);
    uint64_t* p = g.direct(lay.va(kPage), 2 * kPageSize);
    ASSERT_NE(p, nullptr);
    p[kPageSize / 8 + 3] = 0x5678;   // the second page
    uint64_t v = 0;
    ASSERT_TRUE(g.load(Vaddr{lay.va(kPage + 1).v + 24}, v));
    EXPECT_EQ(v, 0x5678u);
    // A request written in place, as MmuBatch does: the hypervisor copies it.
    const uint64_t old = *entry(700);
    p[0] = lay.pte_maddr(700).v | MMU_ATOMIC_PT_UPDATE;
    p[1] = old & ~pte_bit::RW;
    mmu_update_t copied{};
    ASSERT_EQ(m.copy_from_guest(d->vcpus[0], &copied, lay.va(kPage), sizeof(copied)), 0);
    EXPECT_EQ(copied.ptr, p[0]);
    EXPECT_EQ(copied.val, p[1]);
    ASSERT_EQ(g.hypercall(__HYPERVISOR_mmu_update, lay.va(kPage).v, 1, 0, DOMID_SELF), 0);
    EXPECT_EQ(*entry(700), old & ~pte_bit::RW);
}

TEST_F(WalkerTest, DirectIsNullWhereAStoreWouldFault)
{
    GuestContext g(m, d->vcpus[0]);
    unsigned handled = 0;
    g.set_fault_handler([&](GuestContext&, const Fault&) { return ++handled, false; });
    EXPECT_EQ(g.direct(lay.va(0), 8), nullptr) << "a page table is read-only";
    EXPECT_EQ(g.direct(lay.va(lay.nr_frames), kPageSize), nullptr) << "past the physmap";
    EXPECT_EQ(g.direct(lay.va(lay.nr_frames - 1), 2 * kPageSize), nullptr) << "the second page past the physmap";
    // The second page read-only: the first is still written (A and D), as by a store.
    ASSERT_EQ(g.hypercall(__HYPERVISOR_update_va_mapping, lay.va(kPage + 1).v, *entry(kPage + 1) & ~pte_bit::RW,
                          UVMF_INVLPG),
              0);
    std::atomic_ref<uint64_t>(*entry(kPage)).fetch_and(~pte_bit::AD);
    EXPECT_EQ(g.direct(lay.va(kPage), 2 * kPageSize), nullptr);
    EXPECT_EQ(*entry(kPage) & pte_bit::AD, pte_bit::AD);
    EXPECT_NE(g.direct(lay.va(kPage), kPageSize), nullptr);
    // No fault is taken: the caller reaches the memory another way, which does.
    EXPECT_EQ(handled, 0u);
    EXPECT_EQ(g.counters().faults, 0u);
    EXPECT_FALSE(g.store(lay.va(kPage + 1), 1));
    EXPECT_EQ(handled, 1u);
}

TEST_F(WalkerTest, DirectIsNullOverFramesThatAreNotConsecutive)
{
    GuestContext g(m, d->vcpus[0]);
    // The second page mapped to another frame, writable.
    ASSERT_EQ(g.hypercall(__HYPERVISOR_update_va_mapping, lay.va(kPage + 1).v,
                          Pte::make(lay.mfn(700), Pte{*entry(kPage + 1)}.flags()).v, UVMF_INVLPG),
              0);
    EXPECT_EQ(g.direct(lay.va(kPage), 2 * kPageSize), nullptr);
    EXPECT_EQ(static_cast<void*>(g.direct(lay.va(kPage + 1), kPageSize)), host(700));
    EXPECT_EQ(static_cast<void*>(g.direct(lay.va(kPage), kPageSize)), host(kPage));
}

} // namespace
} // namespace pvmmu::sim

namespace pvmmu::sim {
namespace {

// Non-coherent walkers (docs/design.md §5): walkers see a page-table write only once the
// line is cleaned. The hypervisor cleans every table page it wrote before it
// unlocks it, so its updates never depend on the guest.
TEST(NonCoherentWalker, SeesHypervisorUpdatesWithoutAGuestClean)
{
    Machine m(MachineConfig{.cpus = 1, .frames = 4096, .coherent_walker = false});
    DomainLayout lay;
    Domain* d = m.create_domain(1, 1024, 1, lay);
    ASSERT_NE(d, nullptr);
    GuestContext g(m, d->vcpus[0]);
    constexpr uint64_t kPage = 600;
    ASSERT_TRUE(g.store(lay.va(kPage), 1));
    const uint64_t old = m.hv().mem().table(lay.mfn(lay.l1_gpfn(kPage)))[kPage % 512];
    const mmu_update_t req{lay.pte_maddr(kPage).v | MMU_ATOMIC_PT_UPDATE, old & ~pte_bit::RW};
    ASSERT_TRUE(g.write_bytes(lay.va(700), &req, sizeof(req)));
    ASSERT_EQ(g.hypercall(__HYPERVISOR_mmu_update, lay.va(700).v, 1, 0, DOMID_SELF), 0);
    mmuext_op_t op{};
    op.cmd = MMUEXT_TLB_FLUSH_LOCAL;
    ASSERT_TRUE(g.write_bytes(lay.va(701), &op, sizeof(op)));
    ASSERT_EQ(g.hypercall(__HYPERVISOR_mmuext_op, lay.va(701).v, 1, 0, DOMID_SELF), 0);
    Fault f;
    EXPECT_FALSE(g.try_access(lay.va(kPage), Access::Write, f)) << "the walker used a stale writable entry";
    EXPECT_TRUE(f.present);
    EXPECT_EQ(g.counters().cleans, 0u) << "no guest clean was needed";
}

} // namespace
} // namespace pvmmu::sim
