// The machine most core tests start from: a DirectMachine with one domain (id 1,
// 1024 frames, 2 vCPUs on CPUs 0 and 1) built by the domain builder, and helpers
// that issue hypercalls with host arrays as guest arrays (the DirectPlatform's
// guest virtual addresses are host addresses).
//
// Domain layout (core/domain_builder.h): gpfn 0 = L4, 1 = L3, 2 = L2, 3 and 4 =
// the L1s that map gpfns 0-511 and 512-1023 at physmap + gpfn * 4 KiB; page tables
// mapped read-only, every other frame read-write (P|RW|US|A).
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "core/pagetable.h"
#include "support/snapshot.h"

namespace pvmmu::test {

using namespace pvmmu::pte_bit;

// A guest address the DirectPlatform refuses (-EFAULT).
inline constexpr uint64_t kBadGuestPtr = 0x1000;

// The flags the builder gives a data mapping.
inline constexpr uint64_t kDataFlags = P | RW | US | A;
inline constexpr uint64_t kTableLinkFlags = P | RW | US | A;

class CoreTest : public ::testing::Test {
protected:
    static constexpr DomId kDom = 1;
    static constexpr uint64_t kDomFrames = 1024;
    // 32 hypervisor and I/O frames, domain 1, and room for a small domain 2.
    static constexpr uint64_t kMachineFrames = 1280;

    explicit CoreTest(HvConfig cfg = {}) : m(kMachineFrames, cfg)
    {
        d = m.create_domain(kDom, kDomFrames, 2, lay);
    }

    void SetUp() override
    {
        ASSERT_NE(d, nullptr);
        ASSERT_EQ(lay.nr_pt_frames, 5u);
    }

    Hypervisor& hv() { return m.hv(); }
    Vcpu& v0() { return d->vcpus[0]; }
    Vcpu& v1() { return d->vcpus[1]; }
    FrameInfo& frame(Mfn f) { return hv().frame(f); }

    Mfn l4() const { return lay.mfn(0); }
    Mfn l3() const { return lay.mfn(1); }
    Mfn l2() const { return lay.mfn(2); }
    // The L1 that maps gpfn g, and the index of g's entry in it.
    Mfn l1_of(uint64_t g) const { return lay.mfn(3 + g / kEntriesPerTable); }
    static unsigned idx(uint64_t g) { return unsigned(g % kEntriesPerTable); }
    uint64_t* table(Mfn t) { return m.table(t); }
    uint64_t* pte(uint64_t g) { return m.table(l1_of(g)) + idx(g); }

    // The value the builder installed for gpfn g's mapping, with other flags.
    uint64_t map(uint64_t g, uint64_t flags) const { return Pte::make(lay.mfn(g), flags).v; }
    uint64_t map(Mfn f, uint64_t flags) const { return Pte::make(f, flags).v; }

    static uint64_t ptr(Mfn t, unsigned index, unsigned cmd)
    {
        return (maddr_of(t).v + index * sizeof(uint64_t)) | cmd;
    }
    // mmu_update request on gpfn g's L1 entry.
    mmu_update_t req(uint64_t g, unsigned cmd, uint64_t val) const
    {
        return mmu_update_t{ptr(l1_of(g), idx(g), cmd), val};
    }

    long mmu_update(const std::vector<mmu_update_t>& reqs, unsigned* done, uint64_t foreigndom = DOMID_SELF,
                    Vcpu* v = nullptr, unsigned* continuations = nullptr)
    {
        return m.call(v ? *v : v0(), __HYPERVISOR_mmu_update, uint64_t(reqs.data()), reqs.size(),
                      uint64_t(done), foreigndom, 0, continuations);
    }
    // A one-request batch that must succeed (test set-up).
    void must_update(const mmu_update_t& r)
    {
        unsigned done = 0;
        ASSERT_EQ(mmu_update({r}, &done), 0) << "set-up request ptr 0x" << std::hex << r.ptr;
        ASSERT_EQ(done, 1u);
    }

    long mmuext(const std::vector<mmuext_op_t>& ops, unsigned* done, Vcpu* v = nullptr)
    {
        return m.call(v ? *v : v0(), __HYPERVISOR_mmuext_op, uint64_t(ops.data()), ops.size(),
                      uint64_t(done), DOMID_SELF);
    }
    static mmuext_op_t op_mfn(unsigned cmd, Mfn f)
    {
        mmuext_op_t o{};
        o.cmd = cmd;
        o.arg1.mfn = f.v;
        return o;
    }
    static mmuext_op_t op_va(unsigned cmd, uint64_t va, const uint64_t* vcpumask = nullptr)
    {
        mmuext_op_t o{};
        o.cmd = cmd;
        o.arg1.linear_addr = va;
        o.arg2.vcpumask.p = vcpumask;
        return o;
    }

    long update_va_mapping(Vaddr va, uint64_t val, uint64_t flags, Vcpu* v = nullptr)
    {
        return m.call(v ? *v : v0(), __HYPERVISOR_update_va_mapping, va.v, val, flags);
    }

    // Makes the guest's mapping of data frame g read-only (dropping the frame's
    // writable type reference): what a guest does before it hands a frame to the
    // hypervisor as a page table. The builder zeroed every frame.
    void make_read_only(uint64_t g)
    {
        must_update(req(g, MMU_NORMAL_PT_UPDATE, map(g, P | US | A)));
    }

    static CpuMask cpus(std::initializer_list<CpuId> l)
    {
        CpuMask c;
        for (CpuId x : l) c.set(x);
        return c;
    }

    sim::DirectMachine m;
    DomainLayout lay;
    Domain* d = nullptr;
};

// A type_info word: type, type count and flags (ti::kValidated, ti::kPinned).
inline uint64_t typed(PageType t, uint64_t count, uint64_t flags = 0)
{
    return ti::with_type(t) | count | flags;
}

} // namespace pvmmu::test
