// Grant tables on the simulated machine (sim/machine.h enable_grants): the
// granter's domain offers a frame, a guest program of the other domain maps
// it with grant_table_op from its own thread (arguments in its guest memory),
// reads and writes the granter's frame through its own TLB and walker, and
// unmaps it; the unmap's flush leaves no translation behind, so the next
// access faults although the TLB held the mapping a moment before.
#include <gtest/gtest.h>

#include <atomic>

#include "core/grant_table.h"
#include "invariants/invariant_check.h"
#include "sim/guest_context.h"

namespace pvmmu::sim {
namespace {

constexpr uint64_t kTable = 60;     // domain 1's grant table frame (gpfn)
constexpr uint64_t kGranted = 61;   // the frame it grants
constexpr uint64_t kArgs = 20;      // domain 2's argument page
constexpr uint64_t kAt = 21;        // domain 2's page whose address takes the mapping

TEST(SimGrants, AMappedGrantIsUsedThroughTheTlbAndGoneAfterTheUnmap)
{
    Machine m{MachineConfig{.cpus = 2, .frames = 2048}};
    DomainLayout l1, l2;
    Domain* d1 = m.create_domain(1, 128, 1, l1);
    Domain* d2 = m.create_domain(2, 64, 1, l2);
    ASSERT_NE(d1, nullptr);
    ASSERT_NE(d2, nullptr);
    GrantTable* gt = m.enable_grants(*d1, l1, kTable, 1, 4);
    m.enable_grants(*d2, l2, 62, 1, 4);
    {
        LockGuard g(gt->lock, m);
        ASSERT_EQ(gt->grow(m.hv(), 1), GNTST_okay);
    }
    grant_entry_v1_t* e = gt->entry(m.hv(), 3);
    e->frame = uint32_t(l1.mfn(kGranted).v);
    e->domid = 2;
    std::atomic_ref<uint16_t>(e->flags).store(GTF_permit_access);
    static_cast<uint64_t*>(m.hv().mem().frame(l1.mfn(kGranted)))[1] = 0x1234;

    std::atomic<int> map_status{99}, unmap_status{99};
    std::atomic<bool> read_ok{false}, faulted_after{false};
    m.run(*d2, [&](GuestContext& g) {
        const Vaddr args = l2.va(kArgs), at = l2.va(kAt);
        gnttab_map_grant_ref_t op{};
        op.host_addr = at.v;
        op.flags = GNTMAP_host_map;
        op.ref = 3;
        op.dom = 1;
        ASSERT_TRUE(g.write_bytes(args, &op, sizeof(op)));
        ASSERT_EQ(g.hypercall(__HYPERVISOR_grant_table_op, GNTTABOP_map_grant_ref, args.v, 1), 0);
        ASSERT_TRUE(g.read_bytes(args, &op, sizeof(op)));
        map_status = op.status;
        if (op.status != GNTST_okay) return;
        uint64_t v = 0;
        read_ok = g.load(Vaddr{at.v + 8}, v) && v == 0x1234 && g.store(Vaddr{at.v + 16}, 0x5678);
        gnttab_unmap_grant_ref_t u{};
        u.host_addr = at.v;
        u.handle = op.handle;
        ASSERT_TRUE(g.write_bytes(args, &u, sizeof(u)));
        ASSERT_EQ(g.hypercall(__HYPERVISOR_grant_table_op, GNTTABOP_unmap_grant_ref, args.v, 1), 0);
        ASSERT_TRUE(g.read_bytes(args, &u, sizeof(u)));
        unmap_status = u.status;
        Fault f;
        faulted_after = !g.try_access(Vaddr{at.v + 8}, Access::Read, f);
    });
    EXPECT_EQ(map_status.load(), GNTST_okay);
    EXPECT_TRUE(read_ok.load());
    EXPECT_EQ(static_cast<uint64_t*>(m.hv().mem().frame(l1.mfn(kGranted)))[2], 0x5678u);
    EXPECT_EQ(unmap_status.load(), GNTST_okay);
    EXPECT_TRUE(faulted_after.load());
    EXPECT_EQ(std::atomic_ref<uint16_t>(e->flags).load(), GTF_permit_access);
    test::InvariantChecker c(m.hv());
    EXPECT_TRUE(c.run().ok()) << c.describe();
}

} // namespace
} // namespace pvmmu::sim
