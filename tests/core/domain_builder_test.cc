// The domain builder's table placement (core/domain_builder.h): the initial
// tables at gpfn first_pt, for a kernel linked at its physmap's base whose
// image takes gpfn 0 (the loader puts them after the image).
#include <gtest/gtest.h>

#include "core/domain_builder.h"
#include "sim/direct_machine.h"

namespace pvmmu::test {
namespace {

using namespace pvmmu::pte_bit;

constexpr uint64_t kFrames = 1024;   // 2 L1s, 1 L2: 5 table frames

struct Built {
    sim::DirectMachine m{2048};
    Domain d;
    DomainLayout lay;
    int rc = 0;

    explicit Built(uint64_t first_pt, Vaddr physmap = Vaddr{0}, uint64_t frames = kFrames)
    {
        DomainSpec spec;
        spec.id = 1;
        spec.first = m.arena().allocate(frames);
        spec.nr_frames = frames;
        spec.physmap = physmap;   // default: a kernel linked at 0
        spec.first_pt = first_pt;
        rc = build_domain(m.hv(), d, spec, lay);
    }
    uint64_t l1e(uint64_t g) { return m.table(lay.mfn(lay.l1_gpfn(g)))[g % kEntriesPerTable]; }
};

TEST(DomainBuilder, TablesGoToFirstPtAndOnlyTheyAreReadOnly)
{
    static_assert(builder_table_frames(kFrames) == 5);
    Built b(700);
    ASSERT_EQ(b.rc, 0);
    EXPECT_EQ(b.lay.first_pt, 700u);
    EXPECT_EQ(b.lay.l4.v, b.lay.mfn(700).v);
    EXPECT_EQ(b.lay.first_l1, 703u);
    EXPECT_EQ(b.lay.nr_pt_frames, 5u);
    for (uint64_t g = 0; g < kFrames; ++g) {
        const bool table = g >= 700 && g < 705;
        ASSERT_EQ(b.l1e(g), Pte::make(b.lay.mfn(g), P | US | A | (table ? 0 : RW)).v) << g;
    }
    // The L4 is pinned and typed: the validation path accepted the tree.
    EXPECT_NE(b.m.hv().frame(b.lay.l4).type_info.load() & ti::kPinned, 0u);
    EXPECT_EQ(b.d.vcpus[0].guest_table.v, b.lay.l4.v);
}

TEST(DomainBuilder, TablesPastTheDomainAreRefused)
{
    EXPECT_EQ(Built(kFrames - 5).rc, 0);
    EXPECT_EQ(Built(kFrames - 4).rc, -XEN_EINVAL);
    EXPECT_EQ(Built(~0ull - 2).rc, -XEN_EINVAL);   // no wrap
}

// Frames that would end past 2^64 (the sum first + n wraps to a small
// number): refused, never read from the frame table.
TEST(DomainBuilder, FramesWhoseEndWrapsAreRefused)
{
    sim::DirectMachine m{256};
    Domain d;
    DomainLayout lay;
    DomainSpec spec;
    spec.id = 1;
    spec.nr_frames = 64;
    spec.first = Mfn{~0ull - 16};
    EXPECT_EQ(build_domain(m.hv(), d, spec, lay), -XEN_EINVAL);
    spec.first = Mfn{m.arena().nr_frames() - 32};   // in the arena, its end past it
    EXPECT_EQ(build_domain(m.hv(), d, spec, lay), -XEN_EINVAL);
}

// vCPUs on CPUs first_cpu.. whose end wraps 32 bits: refused, never
// brought online at CPU 0xffffffff.
TEST(DomainBuilder, CpusWhoseEndWrapsAreRefused)
{
    sim::DirectMachine m{256};
    Domain d;
    DomainLayout lay;
    DomainSpec spec;
    spec.id = 1;
    spec.nr_frames = 64;
    spec.first = m.arena().allocate(64);
    spec.nr_vcpus = 2;
    spec.first_cpu = 0xffffffff;
    EXPECT_EQ(build_domain(m.hv(), d, spec, lay), -XEN_EINVAL);
    spec.first_cpu = kMaxCpus - 1;   // its second vCPU past the last CPU
    EXPECT_EQ(build_domain(m.hv(), d, spec, lay), -XEN_EINVAL);
}

// The harness's machine refuses a domain the arena has no room for, as
// sim::Machine does, instead of building it on Mfn{~0}.
TEST(DomainBuilder, DirectMachineRefusesADomainPastItsArena)
{
    sim::DirectMachine m{256};
    DomainLayout lay;
    int rc = 0;
    EXPECT_EQ(m.create_domain(1, 512, 1, lay, 0, &rc), nullptr);
    EXPECT_EQ(rc, -XEN_ENOMEM);
    EXPECT_NE(m.create_domain(2, 64, 1, lay, 0, &rc), nullptr);
    EXPECT_EQ(rc, 0);
}

TEST(DomainBuilder, APhysmapAtLinuxsVirtBaseUsesItsL3Entry)
{
    // Linux's VIRT_BASE (__START_KERNEL_map): slot 511, L3 entry 510.
    Built b(0, Vaddr{0xffffffff80000000});
    ASSERT_EQ(b.rc, 0);
    const uint64_t* l4 = b.m.table(b.lay.l4);
    EXPECT_EQ(Pte{l4[511]}.mfn().v, b.lay.mfn(1).v);
    const uint64_t* l3 = b.m.table(b.lay.mfn(1));
    for (unsigned i = 0; i < kEntriesPerTable; ++i)
        if (i != 510) {
            ASSERT_EQ(l3[i], 0u) << i;
        }
    EXPECT_EQ(Pte{l3[510]}.mfn().v, b.lay.mfn(2).v);
    EXPECT_EQ(b.l1e(kFrames - 1), Pte::make(b.lay.mfn(kFrames - 1), P | US | A | RW).v);
    EXPECT_NE(b.m.hv().frame(b.lay.l4).type_info.load() & ti::kPinned, 0u);   // validated
}

TEST(DomainBuilder, APhysmapNotGibAlignedIsRefused)
{
    EXPECT_EQ(Built(0, Vaddr{0xffffffff80200000}).rc, -XEN_EINVAL);   // 2 MiB aligned only
    EXPECT_EQ(Built(0, Vaddr{0xffffffffc0000000}).rc, 0);             // L3 entry 511
}

// The physmap's L2s go into the one L3 of its slot, from its L3 entry on:
// at most (512 - entry) GiB. At entry 511 a frame more than 1 GiB is
// refused (nothing is written for it); the machine is sized for it, so the
// refusal comes from the bound, not from the machine's size, and the same
// physmap with fewer frames builds there. (1 GiB itself at entry 511 builds
// as well, but validating its 512 L1s takes seconds.)
TEST(DomainBuilder, APhysmapPastItsL3IsRefused)
{
    constexpr uint64_t kGib = (1ull << 30) / kPageSize;
    sim::DirectMachine m{kGib + 4096};
    DomainSpec spec;
    spec.id = 1;
    spec.first = m.arena().allocate(kGib + 1);
    ASSERT_NE(spec.first.v, ~0ull);
    spec.physmap = Vaddr{0xffffffffc0000000};   // L3 entry 511
    spec.nr_frames = kGib + 1;
    Domain big;
    DomainLayout lay;
    EXPECT_EQ(build_domain(m.hv(), big, spec, lay), -XEN_EINVAL);
    EXPECT_EQ(m.hv().frame(spec.first).owner.load(), kOwnerFree);

    spec.nr_frames = kFrames;
    Domain fits;
    ASSERT_EQ(build_domain(m.hv(), fits, spec, lay), 0);
    EXPECT_EQ(Pte{m.table(lay.mfn(1))[511]}.mfn().v, lay.mfn(2).v);
}

} // namespace
} // namespace pvmmu::test
