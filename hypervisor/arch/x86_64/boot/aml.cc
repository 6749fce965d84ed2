// See boot/aml.h. Opcodes and encodings: ACPI 6.x §20.2 ("AML Grammar
// Definition").
#include "boot/aml.h"

#include <string.h>

namespace pvmmu::x86 {

namespace {

constexpr uint8_t kNameOp = 0x08, kPackageOp = 0x12, kRootChar = '\\', kParentChar = '^';
constexpr uint8_t kZeroOp = 0x00, kOneOp = 0x01, kBytePrefix = 0x0a, kWordPrefix = 0x0b, kDWordPrefix = 0x0c,
                  kQWordPrefix = 0x0e, kStringPrefix = 0x0d;
constexpr uint8_t kIoPortDescriptor = 0x47;   // small item, type 8, 7 bytes (§6.4.2.5)

// PkgLength (§20.2.4): bits 7-6 of the lead byte count the bytes that follow;
// with none, bits 5-0 are the length, else bits 3-0 are its low nibble and
// each following byte 8 more bits. The length counts itself. 0: malformed.
size_t pkg_length(const uint8_t* p, size_t avail, size_t& used)
{
    if (avail == 0) return 0;
    const unsigned follow = p[0] >> 6;
    if (avail < 1 + follow) return 0;
    used = 1 + follow;
    if (follow == 0) return p[0] & 0x3f;
    size_t n = p[0] & 0x0f;
    for (unsigned i = 0; i < follow; ++i) n |= size_t(p[1 + i]) << (4 + 8 * i);
    return n;
}

// A ComputationalData integer (§20.2.3) at p, or false for anything else
// (a method call, a name: not what a firmware's \_S5 holds).
bool integer(const uint8_t* p, size_t avail, uint64_t& v, size_t& used)
{
    if (avail == 0) return false;
    size_t n = 0;
    switch (p[0]) {
    case kZeroOp: v = 0, used = 1; return true;
    case kOneOp: v = 1, used = 1; return true;
    case kBytePrefix: n = 1; break;
    case kWordPrefix: n = 2; break;
    case kDWordPrefix: n = 4; break;
    case kQWordPrefix: n = 8; break;
    default: return false;
    }
    if (avail < 1 + n) return false;
    v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(p[1 + i]) << (8 * i);
    used = 1 + n;
    return true;
}

// Whether the NameSeg at `at` is the name of a Name() declaration: NameOp
// right before it, or before the root or parent prefixes of its NameString.
bool declared_at(const uint8_t* aml, size_t at)
{
    size_t i = at;
    while (i > 0 && (aml[i - 1] == kParentChar || aml[i - 1] == kRootChar)) --i;
    return i > 0 && aml[i - 1] == kNameOp;
}

bool s5_package(const uint8_t* p, size_t avail, uint8_t& a, uint8_t& b)
{
    if (avail < 1 || p[0] != kPackageOp) return false;
    size_t used = 0;
    const size_t len = pkg_length(p + 1, avail - 1, used);
    if (len < used + 1 || len > avail - 1) return false;   // PkgLength, NumElements, then the elements
    const uint8_t* e = p + 1 + used;
    const uint8_t* end = p + 1 + len;
    const unsigned count = *e++;
    uint64_t v[2] = {};
    const unsigned want = count < 2 ? count : 2;
    if (want == 0) return false;
    for (unsigned i = 0; i < want; ++i) {
        size_t n = 0;
        if (!integer(e, size_t(end - e), v[i], n) || v[i] > 7) return false;
        e += n;
    }
    a = uint8_t(v[0]);
    b = uint8_t(want == 2 ? v[1] : v[0]);
    return true;
}

} // namespace

bool aml_find_s5(const uint8_t* aml, size_t len, uint8_t& slp_typa, uint8_t& slp_typb)
{
    for (size_t i = 0; i + 4 <= len; ++i) {
        if (memcmp(aml + i, "_S5_", 4) != 0 || !declared_at(aml, i)) continue;
        if (s5_package(aml + i + 4, len - i - 4, slp_typa, slp_typb)) return true;
    }
    return false;
}

bool aml_find_pvpanic(const uint8_t* aml, size_t len, uint16_t& port, size_t window)
{
    static const char kHid[] = "QEMU0001";   // with its NUL: the whole string
    for (size_t i = 1; i + sizeof(kHid) <= len; ++i) {
        if (aml[i - 1] != kStringPrefix || memcmp(aml + i, kHid, sizeof(kHid)) != 0) continue;
        const size_t from = i + sizeof(kHid);
        const size_t to = len - from < window ? len : from + window;
        // IO (Decode16|Decode10, min, max, alignment, length): a fixed port
        // has min == max; pvpanic's register is one byte.
        for (size_t j = from; j + 8 <= to; ++j) {
            const uint8_t* d = aml + j;
            if (d[0] != kIoPortDescriptor || d[1] > 1 || d[7] != 1) continue;
            const uint16_t min = uint16_t(d[2] | d[3] << 8), max = uint16_t(d[4] | d[5] << 8);
            if (min != max || min == 0) continue;
            port = min;
            return true;
        }
    }
    return false;
}

} // namespace pvmmu::x86
