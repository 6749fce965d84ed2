// bzImage payloads; see bzimage.h.
#include "bzimage.h"

#include <cstring>

#include "core/range.h"

namespace pvmmu::run {

namespace {

// The setup header's fields used here (Linux's Documentation/x86/boot.rst,
// "The Real-Mode Kernel Header"): offsets into the file.
constexpr size_t kSetupSects = 0x1f1, kHeaderMagic = 0x202, kVersion = 0x206;
constexpr size_t kPayloadOffset = 0x248, kPayloadLength = 0x24c, kHeaderEnd = 0x250;
constexpr uint16_t kFirstWithPayload = 0x208;

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

bool starts(const uint8_t* p, size_t n, std::initializer_list<uint8_t> magic)
{
    if (n < magic.size()) return false;
    return std::memcmp(p, magic.begin(), magic.size()) == 0;
}

// The formats Linux can compress its payload with (CONFIG_KERNEL_*), by their
// leading bytes; only XZ (Debian's choice) and an uncompressed ELF are
// unpacked here.
const char* format_of(const uint8_t* p, size_t n)
{
    if (starts(p, n, {0xfd, '7', 'z', 'X', 'Z', 0})) return "xz";
    if (starts(p, n, {0x7f, 'E', 'L', 'F'})) return "elf";
    if (starts(p, n, {0x1f, 0x8b})) return "gzip";
    if (starts(p, n, {'B', 'Z', 'h'})) return "bzip2";
    if (starts(p, n, {0x5d, 0, 0})) return "lzma";
    if (starts(p, n, {0x89, 'L', 'Z', 'O'})) return "lzo";
    if (starts(p, n, {0x02, 0x21, 0x4c, 0x18})) return "lz4";
    if (starts(p, n, {0x28, 0xb5, 0x2f, 0xfd})) return "zstd";
    return nullptr;
}

} // namespace

BzImage bzimage_unpack(const std::vector<uint8_t>& file, std::vector<uint8_t>& elf, std::string& why, size_t max)
{
    const uint8_t* f = file.data();
    if (file.size() < kHeaderEnd || std::memcmp(f + kHeaderMagic, "HdrS", 4) != 0) return BzImage::NotOne;
    const uint16_t version = uint16_t(f[kVersion] | f[kVersion + 1] << 8);
    if (version < kFirstWithPayload) {
        why = "a bzImage of boot protocol " + std::to_string(version >> 8) + "." + std::to_string(version & 0xff) +
              ", older than 2.08: it does not say where its payload is";
        return BzImage::Refused;
    }
    // The protected-mode part starts after the boot sector and setup_sects
    // sectors (0 meaning 4); the payload's offset is counted from there.
    const uint64_t setup_sects = f[kSetupSects] ? f[kSetupSects] : 4;
    const uint64_t at = (setup_sects + 1) * 512 + le32(f + kPayloadOffset), len = le32(f + kPayloadLength);
    if (len == 0 || !range_within(at, len, 0, file.size())) {
        why = "the bzImage's payload lies outside the file";
        return BzImage::Refused;
    }
    const char* format = format_of(f + at, len);
    if (format && std::strcmp(format, "xz") == 0) return bzimage_unxz(f + at, len, max, elf, why) ? BzImage::Unpacked : BzImage::Refused;
    if (format && std::strcmp(format, "elf") == 0) {
        if (len > max) {
            why = "the bzImage's ELF payload is larger than " + bzimage_size_words(max) + ", the most taken";
            return BzImage::Refused;
        }
        elf.assign(f + at, f + at + len);
        return BzImage::Unpacked;
    }
    why = format ? std::string("the bzImage's payload is ") + format + "-compressed; pvmmu-run unpacks xz only"
                 : "the bzImage's payload is in no format pvmmu-run knows";
    return BzImage::Refused;
}

std::string bzimage_size_words(size_t max)
{
    constexpr size_t kMiB = size_t(1) << 20;
    return max % kMiB == 0 ? std::to_string(max / kMiB) + " MiB" : std::to_string(max) + " bytes";
}

} // namespace pvmmu::run
