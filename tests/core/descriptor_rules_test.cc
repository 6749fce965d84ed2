// The descriptors a 64-bit PV guest may put in its GDT and LDT, and set_gdt's
// and update_descriptor's argument rules (core/descriptor_rules.h), as Xen
// 4.17 answers them (docs/abi.md §10, §11), but for the one case marked
// pvmmu's own below.
#include <gtest/gtest.h>

#include "core/descriptor_rules.h"

namespace pvmmu::test {
namespace {

// Flat descriptors (their bits: core/descriptor_rules.h), present, DPL 0:
// 64-bit code, 32-bit code, data; then system ones: a 64-bit TSS (type 9), a
// 64-bit call gate (type 12), an LDT (type 2).
constexpr uint64_t kCode64 = 0x00af9a000000ffffull, kCode32 = 0x00cf9a000000ffffull, kData = 0x00cf92000000ffffull;
constexpr uint64_t kTss = 0x0000890000000067ull, kCallGate = 0x00008c0000000000ull, kLdt = 0x0000820000000fffull;
constexpr uint64_t dpl3(uint64_t d) { return d | desc_bit::kDpl; }

uint64_t fixed(uint64_t d)
{
    EXPECT_TRUE(guest_desc_fix(d));
    return d;
}

TEST(DescriptorRules, GatesTssAndLdtDescriptorsAreRefusedAtAnyDpl)
{
    for (uint64_t d : {kTss, kCallGate, kLdt}) {
        EXPECT_FALSE(guest_desc_ok(d)) << std::hex << d;
        EXPECT_FALSE(guest_desc_ok(dpl3(d))) << std::hex << d;
    }
}

TEST(DescriptorRules, ARefusedDescriptorIsLeftAsItWas)
{
    uint64_t d = kTss;
    EXPECT_FALSE(guest_desc_fix(d));
    EXPECT_EQ(d & ~desc_bit::kDpl, kTss);
}

TEST(DescriptorRules, ANonPresentDescriptorIsTakenAsItIs)
{
    for (uint64_t d : {kTss & ~desc_bit::kP, kCallGate & ~desc_bit::kP, kCode64 & ~desc_bit::kP, ~desc_bit::kP})
        EXPECT_EQ(fixed(d), d) << std::hex << d;
}

TEST(DescriptorRules, CodeAndDataGetTheirDplRaisedToThree)
{
    EXPECT_EQ(fixed(kCode64), dpl3(kCode64));
    EXPECT_EQ(fixed(kData | (1ull << desc_bit::kDplShift)), dpl3(kData));
    EXPECT_EQ(fixed(dpl3(kData)), dpl3(kData));
    EXPECT_EQ(fixed(dpl3(kCode64)), dpl3(kCode64));
    EXPECT_EQ(fixed(dpl3(kCode64) | desc_bit::kAccessed), dpl3(kCode64) | desc_bit::kAccessed);
}

TEST(DescriptorRules, CompatibilityModeCodeIsTaken)
{
    EXPECT_EQ(fixed(kCode32), dpl3(kCode32));
}

// pvmmu's rule for a present type-0 system descriptor (its DPL raised), not
// verified against Xen 4.17, which may keep it as it is (docs/abi.md §11,
// "Not yet checked on Xen").
TEST(DescriptorRules, PvmmuTakesTheSystemTypeZeroWithItsDplRaised)
{
    EXPECT_EQ(fixed(desc_bit::kP), desc_bit::kP | desc_bit::kDpl);
    EXPECT_TRUE(guest_desc_ok(0));
}

TEST(DescriptorRules, SetGdtTakesEntriesUpToTheReservedOnes)
{
    EXPECT_EQ(set_gdt_entries_check(FIRST_RESERVED_GDT_ENTRY + 1), -XEN_EINVAL);
    EXPECT_EQ(set_gdt_entries_check(~0u), -XEN_EINVAL);
    EXPECT_EQ(set_gdt_entries_check(FIRST_RESERVED_GDT_ENTRY), 0);
    EXPECT_EQ(set_gdt_entries_check(0), 0);
    EXPECT_EQ(gdt_frames(FIRST_RESERVED_GDT_ENTRY), uint32_t(FIRST_RESERVED_GDT_PAGE));
}

TEST(DescriptorRules, GdtFramesAndEntriesPerPage)
{
    EXPECT_EQ(gdt_frames(0), 0u);
    EXPECT_EQ(gdt_frames(1), 1u);
    EXPECT_EQ(gdt_frames(512), 1u);
    EXPECT_EQ(gdt_frames(513), 2u);
    EXPECT_EQ(descriptors_on_page(513, 0), 512u);
    EXPECT_EQ(descriptors_on_page(513, 1), 1u);
    EXPECT_EQ(descriptors_on_page(100, 0), 100u);
}

TEST(DescriptorRules, UpdateDescriptorWantsAnAlignedAddressAndADescriptorItTakes)
{
    uint64_t d = kData;
    EXPECT_EQ(update_descriptor_check(0x1004, d), -XEN_EINVAL);
    d = kCallGate;
    EXPECT_EQ(update_descriptor_check(0x1000, d), -XEN_EINVAL);
    d = kData;
    EXPECT_EQ(update_descriptor_check(0x1ff8, d), 0);
    EXPECT_EQ(d, dpl3(kData));   // what is stored
}

TEST(DescriptorRules, APageTableInUseIsNoDescriptorFrameNorAWritableOneForAnLdt)
{
    for (PageType t : {PageType::L1, PageType::L2, PageType::L3, PageType::L4}) {
        EXPECT_EQ(descriptor_frame_check(t, 1, false), -XEN_EINVAL);
        EXPECT_EQ(descriptor_frame_check(t, 1, true), -XEN_EINVAL);
    }
    EXPECT_EQ(descriptor_frame_check(PageType::Writable, 1, true), -XEN_EINVAL);
}

TEST(DescriptorRules, AFrameOfNoTypeInUseOrWritableForAGdtIsADescriptorFrame)
{
    EXPECT_EQ(descriptor_frame_check(PageType::None, 0, true), 0);
    EXPECT_EQ(descriptor_frame_check(PageType::L1, 0, true), 0);   // the type is stale: no reference holds it
    EXPECT_EQ(descriptor_frame_check(PageType::Writable, 0, true), 0);
    EXPECT_EQ(descriptor_frame_check(PageType::Writable, 3, false), 0);
}

TEST(DescriptorRules, AnLdtInTheHypervisorsPartIsInvalidUnlessEmpty)
{
    EXPECT_EQ(set_ldt_base_check(0xffff800000000000, 1), -XEN_EINVAL);
    EXPECT_EQ(set_ldt_base_check(0x0000800000000000, 8192), -XEN_EINVAL);
    EXPECT_EQ(set_ldt_base_check(0xffff800000000000, 0), 0);
    EXPECT_EQ(set_ldt_base_check(0x00007ffffffff000, 1), 0);
    EXPECT_EQ(set_ldt_base_check(0xffff880000000000, 8192), 0);
}

} // namespace
} // namespace pvmmu::test
