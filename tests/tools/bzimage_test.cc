// pvmmu-run's bzImage unpacker (tools/bzimage.cc): files shaped as a bzImage
// (the setup header's fields at their offsets, the payload after setup_sects
// sectors) built here around a payload compressed here with liblzma, as
// Linux's build does (XZ, then the unpacked size as 4 bytes).
#include "bzimage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>
#include <lzma.h>

namespace pvmmu::run {
namespace {

// The most unpacked in these tests: a domain of 64 MiB.
constexpr size_t kCap = size_t(64) << 20;

std::vector<uint8_t> some_elf()
{
    std::vector<uint8_t> e(100000);
    const uint8_t magic[] = {0x7f, 'E', 'L', 'F'};
    std::memcpy(e.data(), magic, 4);
    for (size_t i = 4; i < e.size(); ++i) e[i] = uint8_t(i * 7 / 13);   // compresses, not all zero
    return e;
}

std::vector<uint8_t> xz(const std::vector<uint8_t>& in)
{
    std::vector<uint8_t> out(in.size() + 4096);
    size_t pos = 0;
    EXPECT_EQ(lzma_easy_buffer_encode(6, LZMA_CHECK_CRC32, nullptr, in.data(), in.size(), out.data(), &pos, out.size()),
              LZMA_OK);
    out.resize(pos);
    const uint32_t n = uint32_t(in.size());
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(n >> (8 * i)));
    return out;
}

void put32(std::vector<uint8_t>& f, size_t at, uint32_t v)
{
    for (int i = 0; i < 4; ++i) f[at + i] = uint8_t(v >> (8 * i));
}

// setup_sects 3 (so the protected-mode part starts at 0x800), the payload
// 0x40 bytes into it, boot protocol `version`.
std::vector<uint8_t> bzimage(const std::vector<uint8_t>& payload, uint16_t version = 0x20f)
{
    // What follows the payload in a real one: 16 bytes of 0xee after it.
    std::vector<uint8_t> f(0x800 + 0x40 + payload.size() + 16, 0xee);
    std::fill(f.begin(), f.begin() + 0x840, 0);
    std::copy(payload.begin(), payload.end(), f.begin() + 0x840);
    f[0x1f1] = 3;
    std::memcpy(&f[0x202], "HdrS", 4);
    f[0x206] = uint8_t(version), f[0x207] = uint8_t(version >> 8);
    put32(f, 0x248, 0x40);
    put32(f, 0x24c, uint32_t(payload.size()));
    return f;
}

TEST(BzImage, XzPayloadUnpacksToTheElf)
{
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> out;
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(xz(elf)), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
}

TEST(BzImage, AWrongSizeHintStillUnpacks)
{
    // The trailing size is only a first guess for the buffer: too small, it grows.
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> p = xz(elf), out;
    put32(p, p.size() - 4, 1);
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(p), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
}

TEST(BzImage, SetupSectsZeroMeansFour)
{
    const std::vector<uint8_t> elf = some_elf(), p = xz(elf);
    std::vector<uint8_t> f = bzimage(p), out;
    f[0x1f1] = 0;                                  // 4 sectors: the part starts at 0xa00
    f.insert(f.begin() + 0x800, 0x200, 0);         // the payload moves there
    std::string why;
    ASSERT_EQ(bzimage_unpack(f, out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
}

TEST(BzImage, AnUncompressedElfPayloadIsTakenAsItIs)
{
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> out;
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(elf), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
}

TEST(BzImage, APlainElfIsNotOne)
{
    std::vector<uint8_t> out;
    std::string why;
    EXPECT_EQ(bzimage_unpack(some_elf(), out, why, kCap), BzImage::NotOne);
    EXPECT_EQ(bzimage_unpack({}, out, why, kCap), BzImage::NotOne);
    EXPECT_TRUE(out.empty());
}

TEST(BzImage, OtherFormatsAreRefusedByName)
{
    const struct {
        std::vector<uint8_t> magic;
        const char* name;
    } formats[] = {{{0x1f, 0x8b, 8}, "gzip"},        {{'B', 'Z', 'h', '9'}, "bzip2"},
                   {{0x5d, 0, 0, 0x80}, "lzma"},      {{0x89, 'L', 'Z', 'O', 0}, "lzo"},
                   {{0x02, 0x21, 0x4c, 0x18}, "lz4"}, {{0x28, 0xb5, 0x2f, 0xfd}, "zstd"}};
    for (const auto& f : formats) {
        std::vector<uint8_t> p = f.magic, out;
        p.resize(64, 0x55);
        std::string why;
        EXPECT_EQ(bzimage_unpack(bzimage(p), out, why, kCap), BzImage::Refused) << f.name;
        EXPECT_NE(why.find(std::string(f.name) + "-compressed"), std::string::npos) << why;
    }
    std::vector<uint8_t> out;
    std::string why;
    EXPECT_EQ(bzimage_unpack(bzimage(std::vector<uint8_t>(64, 0x55)), out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("no format"), std::string::npos) << why;
}

TEST(BzImage, BadHeadersAndPayloadsAreRefused)
{
    const std::vector<uint8_t> p = xz(some_elf());
    std::vector<uint8_t> out;
    std::string why;
    EXPECT_EQ(bzimage_unpack(bzimage(p, 0x207), out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("2.7"), std::string::npos) << why;

    std::vector<uint8_t> f = bzimage(p);
    put32(f, 0x24c, uint32_t(f.size()));   // longer than what is left of the file
    EXPECT_EQ(bzimage_unpack(f, out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("outside the file"), std::string::npos) << why;
    put32(f, 0x24c, 0);
    EXPECT_EQ(bzimage_unpack(f, out, why, kCap), BzImage::Refused);

    std::vector<uint8_t> cut(p.begin(), p.begin() + long(p.size() / 2));   // truncated stream
    EXPECT_EQ(bzimage_unpack(bzimage(cut), out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("truncated"), std::string::npos) << why;

    std::vector<uint8_t> bad = p;
    for (size_t i = 40; i < 60; ++i) bad[i] ^= 0x5a;   // inside the compressed block
    EXPECT_EQ(bzimage_unpack(bzimage(bad), out, why, kCap), BzImage::Refused);
    EXPECT_NE(why.find("corrupt"), std::string::npos) << why;
}

// p with its one block's LZMA2 dictionary declared as dict bytes: the block
// header rewritten (and its CRC32) by liblzma's own coder; the data is the
// same, so only the decoder's memory limit can refuse it.
std::vector<uint8_t> with_dictionary(std::vector<uint8_t> p, uint32_t dict)
{
    constexpr size_t kBlock = LZMA_STREAM_HEADER_SIZE;   // the block header follows the stream header
    lzma_filter filters[LZMA_FILTERS_MAX + 1];
    lzma_block b{};
    b.version = 0;
    b.check = LZMA_CHECK_CRC32;
    b.filters = filters;
    b.header_size = lzma_block_header_size_decode(p[kBlock]);
    EXPECT_EQ(lzma_block_header_decode(&b, nullptr, &p[kBlock]), LZMA_OK);
    EXPECT_EQ(filters[0].id, LZMA_FILTER_LZMA2);
    static_cast<lzma_options_lzma*>(filters[0].options)->dict_size = dict;
    const uint32_t size = b.header_size;
    EXPECT_EQ(lzma_block_header_size(&b), LZMA_OK);
    EXPECT_EQ(b.header_size, size);
    EXPECT_EQ(lzma_block_header_encode(&b, &p[kBlock]), LZMA_OK);
    for (size_t i = 0; filters[i].id != LZMA_VLI_UNKNOWN; ++i) free(filters[i].options);
    return p;
}

TEST(BzImage, AHugeDictionaryIsRefusedByTheMemoryLimit)
{
    const std::vector<uint8_t> elf = some_elf(), p = xz(elf);
    std::vector<uint8_t> out;
    std::string why;
    // The rewrite itself is sound: a 4 MiB dictionary unpacks.
    ASSERT_EQ(bzimage_unpack(bzimage(with_dictionary(p, 4u << 20)), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
    EXPECT_EQ(bzimage_unpack(bzimage(with_dictionary(p, 3u << 29)), out, why, kCap), BzImage::Refused);   // 1.5 GiB
    EXPECT_NE(why.find("LZMA_MEMLIMIT_ERROR"), std::string::npos) << why;
    EXPECT_TRUE(out.empty());
}

TEST(BzImage, AHugeDeclaredSizeReservesLittle)
{
    // A 1 GiB trailing size on a small payload: the buffer is sized by the
    // payload, not by what it says it unpacks to.
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> p = xz(elf), out;
    put32(p, p.size() - 4, 1u << 30);
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(p), out, why, kCap), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
    EXPECT_LT(out.capacity(), size_t(16) << 20);
}

TEST(BzImage, TheLimitItselfUnpacks)
{
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> p = xz(elf), out;
    put32(p, p.size() - 4, 1);   // no hint: the buffer grows to the end
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(p), out, why, elf.size()), BzImage::Unpacked) << why;
    EXPECT_EQ(out, elf);
    EXPECT_EQ(bzimage_unpack(bzimage(p), out, why, elf.size() - 1), BzImage::Refused);
    EXPECT_NE(why.find("unpacks past"), std::string::npos) << why;
}

// An uncompressed ELF payload is held to the same cap as an XZ one.
TEST(BzImage, AnElfPayloadLargerThanTheCapIsRefused)
{
    const std::vector<uint8_t> elf = some_elf();
    std::vector<uint8_t> out;
    std::string why;
    ASSERT_EQ(bzimage_unpack(bzimage(elf), out, why, elf.size()), BzImage::Unpacked) << why;
    EXPECT_EQ(bzimage_unpack(bzimage(elf), out, why, elf.size() - 1), BzImage::Refused);
    EXPECT_EQ(why, "the bzImage's ELF payload is larger than 99999 bytes, the most taken");
}

// A payload that unpacks past the cap stops there: a 16 MiB run of zeros
// (a few KiB of XZ) under a 1 MiB cap, never held whole.
TEST(BzImage, AnXzPayloadPastTheCapStopsAtTheCap)
{
    std::vector<uint8_t> big(size_t(16) << 20, 0);
    std::memcpy(big.data(), "\x7f" "ELF", 4);
    const std::vector<uint8_t> p = xz(big);
    big.clear();
    big.shrink_to_fit();
    std::vector<uint8_t> out;
    std::string why;
    EXPECT_EQ(bzimage_unpack(bzimage(p), out, why, size_t(1) << 20), BzImage::Refused);
    EXPECT_EQ(why, "the XZ payload unpacks past 1 MiB, the most taken");
    EXPECT_TRUE(out.empty());
    EXPECT_LE(out.capacity(), size_t(2) << 20);
}

} // namespace
} // namespace pvmmu::run
