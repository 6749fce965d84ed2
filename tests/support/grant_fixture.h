// The core fixture with grant tables: domain 1 (the granter in most tests;
// its table's frames are its gpfns 1000-1003, at most 4) and domain 2 (64
// frames, one vCPU on CPU 2; the mapper; its table's frames its gpfns 60-61).
// Each maptrack holds kHandles handles. Grant entries are written where the
// guest would write them (the table frames' memory); sub-ops are issued with
// host structs as guest arguments (the DirectPlatform's guest addresses are
// host addresses).
#pragma once

#include <memory>
#include <vector>

#include "core/domain_teardown.h"
#include "core/grant_table.h"
#include "invariants/invariant_check.h"
#include "support/core_fixture.h"

namespace pvmmu::test {

class GrantTest : public CoreTest {
protected:
    static constexpr DomId kPeer = 2;
    static constexpr uint32_t kHandles = 8;
    static constexpr uint64_t kTableGpfn = 1000;     // domain 1's first table frame
    static constexpr uint64_t kPeerTableGpfn = 60;   // domain 2's

    explicit GrantTest(HvConfig cfg = {}) : CoreTest(cfg) {}

    void SetUp() override
    {
        CoreTest::SetUp();
        d2 = m.create_domain(kPeer, 64, 1, lay2, 2);
        ASSERT_NE(d2, nullptr);
        for (unsigned i = 0; i < 4; ++i) frames1[i] = lay.mfn(kTableGpfn + i);
        for (unsigned i = 0; i < 2; ++i) frames2[i] = lay2.mfn(kPeerTableGpfn + i);
        active1.resize(4 * gnt::kEntriesPerFrame);
        active2.resize(2 * gnt::kEntriesPerFrame);
        mt1.resize(kHandles);
        mt2.resize(kHandles);
        gt1 = std::make_unique<GrantTable>(kDom, GrantLimits{4, 1},
                                           GrantStorage{frames1, 4, active1.data(), mt1.data(), kHandles});
        gt2 = std::make_unique<GrantTable>(kPeer, GrantLimits{2, 1},
                                           GrantStorage{frames2, 2, active2.data(), mt2.data(), kHandles});
        d->grants = gt1.get();
        d2->grants = gt2.get();
    }

    Vcpu& p0() { return d2->vcpus[0]; }

    long gnttab(unsigned cmd, void* op, unsigned count = 1, Vcpu* v = nullptr)
    {
        return m.call(v ? *v : v0(), __HYPERVISOR_grant_table_op, cmd, uint64_t(op), count);
    }

    // Domain 1's table grown to `n` frames (set-up: must succeed).
    void setup(uint32_t n = 1)
    {
        std::vector<xen_pfn_t> list(n);
        gnttab_setup_table_t op{};
        op.dom = DOMID_SELF;
        op.nr_frames = n;
        op.frame_list.p = list.data();
        ASSERT_EQ(gnttab(GNTTABOP_setup_table, &op), 0);
        ASSERT_EQ(op.status, GNTST_okay);
    }

    grant_entry_v1_t& entry(grant_ref_t ref) { return *gt1->entry(hv(), ref); }
    // Domain 1 offers its gpfn `g` to `to` (the guest's own write: frame and
    // domid first, flags last).
    void grant(grant_ref_t ref, uint64_t g, uint16_t flags = GTF_permit_access, DomId to = kPeer)
    {
        grant_entry_v1_t& e = entry(ref);
        e.frame = uint32_t(lay.mfn(g).v);
        e.domid = to;
        std::atomic_ref<uint16_t>(e.flags).store(flags);
    }
    uint16_t flags(grant_ref_t ref) { return std::atomic_ref<uint16_t>(entry(ref).flags).load(); }

    // Domain 2's address of its gpfn g, and the L1 entry that maps it.
    uint64_t peer_va(uint64_t g) const { return lay2.va(g).v; }
    uint64_t* peer_pte(uint64_t g) { return m.table(lay2.mfn(lay2.l1_gpfn(g))) + g % kEntriesPerTable; }
    uint64_t peer_pte_maddr(uint64_t g) const { return lay2.pte_maddr(g).v; }

    gnttab_map_grant_ref_t map_grant(grant_ref_t ref, uint64_t host_addr, uint32_t flags_in = GNTMAP_host_map,
                               DomId dom = kDom, Vcpu* v = nullptr)
    {
        gnttab_map_grant_ref_t op{};
        op.host_addr = host_addr;
        op.flags = flags_in;
        op.ref = ref;
        op.dom = dom;
        op.status = 99;
        EXPECT_EQ(gnttab(GNTTABOP_map_grant_ref, &op, 1, v ? v : &p0()), 0);
        return op;
    }
    int16_t unmap_grant(grant_handle_t h, uint64_t host_addr, Vcpu* v = nullptr)
    {
        gnttab_unmap_grant_ref_t op{};
        op.host_addr = host_addr;
        op.handle = h;
        op.status = 99;
        EXPECT_EQ(gnttab(GNTTABOP_unmap_grant_ref, &op, 1, v ? v : &p0()), 0);
        return op.status;
    }

    Domain* d2 = nullptr;
    DomainLayout lay2;
    Mfn frames1[4] = {}, frames2[2] = {};
    std::vector<ActiveGrant> active1, active2;
    std::vector<MapTrack> mt1, mt2;
    std::unique_ptr<GrantTable> gt1, gt2;
};

} // namespace pvmmu::test
