// The pvmmu ABI header (docs/design.md §3): the FLAG_RANGE val word's fields sit where the
// spec table puts them, encode and decode are inverse on everything encodable, and
// the limits are enforced; the command numbers agree with Xen's.
#include <gtest/gtest.h>

#include <pvmmu/abi.h>

namespace pvmmu::abi {
namespace {

// The PTE bits a FLAG_RANGE request can carry: 11:0 and 63:52.
constexpr unsigned kFlagBits[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                  52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

TEST(AbiTest, CommandNumbersAreXens)
{
    EXPECT_EQ(MMU_NORMAL_PT_UPDATE, 0);
    EXPECT_EQ(MMU_MACHPHYS_UPDATE, 1);
    EXPECT_EQ(MMU_ATOMIC_PT_UPDATE, 2);
    EXPECT_EQ(MMU_PT_UPDATE_PRESERVE_AD, 2);
    EXPECT_EQ(MMU_PT_UPDATE_NO_TRANSLATE, 3);
    EXPECT_EQ(MMU_FLAG_RANGE_UPDATE, 4);
    EXPECT_EQ(PVMMU_MMU_CMD_MASK, 7u);
    EXPECT_EQ(PVMMU_MMU_UPDATE_PREEMPTED, 1u << 31);
}

TEST(AbiTest, FlagRangeFieldsSitAtTheSpecTablesBits)
{
    EXPECT_EQ(encode_flag_range(0xfff, 0, 0), 0xfffull);                                 // 11:0
    EXPECT_EQ(encode_flag_range(0xfffull << 52, 0, 0), 0xfffull << 12);                  // 23:12
    EXPECT_EQ(encode_flag_range(0xfff, 0xfff, 0), 0xfffull | (0xfffull << 24));          // 35:24
    EXPECT_EQ(encode_flag_range(0xfffull << 52, 0xfffull << 52, 0),
              (0xfffull << 12) | (0xfffull << 36));                                      // 47:36
    EXPECT_EQ(encode_flag_range(0, 0, 1023), 0x3ffull << 48);                            // 57:48
    EXPECT_EQ(PVMMU_FR_MBZ_MASK, 0xfc00'0000'0000'0000ull);                              // 63:58
}

TEST(AbiTest, EveryMaskBitRoundTripsAloneAndWithItsNewValue)
{
    for (unsigned b : kFlagBits) {
        const uint64_t bit = 1ull << b;
        ASSERT_TRUE(encodable(bit, 0, 1));
        ASSERT_TRUE(encodable(bit, bit, 1));
        const FlagRange cleared = decode_flag_range(encode_flag_range(bit, 0, 1));
        EXPECT_EQ(cleared.mask, bit) << b;
        EXPECT_EQ(cleared.bits, 0u) << b;
        const FlagRange set = decode_flag_range(encode_flag_range(bit, bit, 1));
        EXPECT_EQ(set.mask, bit) << b;
        EXPECT_EQ(set.bits, bit) << b;
        EXPECT_TRUE(flag_range_mbz_ok(encode_flag_range(bit, bit, 1023))) << b;
    }
}

TEST(AbiTest, AllFieldsTogetherRoundTrip)
{
    const uint64_t all = PVMMU_FR_PTE_FLAG_BITS;
    const uint64_t patterns[] = {all, 0, 0xa5a0'0000'0000'05a5ull & all, 0x5a50'0000'0000'0a5aull & all};
    for (uint64_t bits : patterns) {
        for (uint32_t count : {0u, 1u, 511u, 512u, 1023u}) {
            const uint64_t val = encode_flag_range(all, bits, count);
            ASSERT_TRUE(flag_range_mbz_ok(val));
            const FlagRange fr = decode_flag_range(val);
            EXPECT_EQ(fr.mask, all);
            EXPECT_EQ(fr.bits, bits);
            EXPECT_EQ(fr.count, count);
            EXPECT_EQ(encode_flag_range(fr.mask, fr.bits, fr.count), val);
        }
    }
}

TEST(AbiTest, EveryCountFromZeroTo1023RoundTrips)
{
    for (uint32_t c = 0; c <= PVMMU_FR_COUNT_MAX; ++c) {
        const uint64_t val = encode_flag_range(0x2, 0x2, c);
        ASSERT_EQ(decode_flag_range(val).count, c);
        ASSERT_TRUE(flag_range_mbz_ok(val));
    }
}

TEST(AbiTest, NewBitsOutsideTheMaskAreDropped)
{
    const FlagRange fr = decode_flag_range(encode_flag_range(0x2, 0x2 | 0x4 | (1ull << 63), 1));
    EXPECT_EQ(fr.mask, 0x2u);
    EXPECT_EQ(fr.bits, 0x2u);
    // The decoder masks too: a hand-made word with new bits outside the mask.
    const uint64_t hand = 0x2 | (0x6ull << PVMMU_FR_NEW_LO_SHIFT) | (1ull << PVMMU_FR_COUNT_SHIFT);
    EXPECT_EQ(decode_flag_range(hand).bits, 0x2u);
}

TEST(AbiTest, EncodableRejectsAddressBitsBitsOutsideTheMaskAndCountsAbove1023)
{
    EXPECT_TRUE(encodable(PVMMU_FR_PTE_FLAG_BITS, PVMMU_FR_PTE_FLAG_BITS, 1023));
    for (unsigned b = 12; b < 52; ++b) EXPECT_FALSE(encodable(1ull << b, 0, 1)) << b;
    EXPECT_FALSE(encodable(0x2, 0x4, 1));
    EXPECT_FALSE(encodable(0x2, 0x2, 1024));
    EXPECT_FALSE(encodable(0x2, 0x2, ~0u));
}

TEST(AbiTest, MbzCheckCoversExactlyBits63To58)
{
    for (unsigned b = 0; b < 64; ++b) EXPECT_EQ(flag_range_mbz_ok(1ull << b), b < 58) << b;
    // The encoder never sets them, whatever it is given.
    EXPECT_TRUE(flag_range_mbz_ok(encode_flag_range(~0ull, ~0ull, ~0u)));
}

TEST(AbiTest, PackAndUnpackAreInverseOnFlagBits)
{
    for (unsigned b : kFlagBits) EXPECT_EQ(unpack_flags(pack_flags(1ull << b)), 1ull << b) << b;
    for (unsigned f = 0; f < 24; ++f) EXPECT_EQ(pack_flags(unpack_flags(1ull << f)), 1ull << f) << f;
    EXPECT_EQ(pack_flags(pvmmu::abi::FlagRange{}.mask), 0u);
}

TEST(AbiTest, FeatureBitsAreDistinctAndInSubmapZero)
{
    EXPECT_EQ(XENFEAT_mmu_pt_update_preserve_ad, 5);
    EXPECT_LT(PVMMU_FEAT_flag_range_update, 32);
    EXPECT_NE(PVMMU_FEAT_flag_range_update, XENFEAT_mmu_pt_update_preserve_ad);
    EXPECT_GT(PVMMU_FEAT_flag_range_update, XENFEAT_direct_mapped);   // Xen 4.17's highest
}

} // namespace
} // namespace pvmmu::abi
