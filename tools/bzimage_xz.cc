// bzImage's XZ payloads, with liblzma (bzimage.h; built where CMake found
// liblzma, else bzimage_xz_missing.cc).
#include <algorithm>
#include <cstring>

#include <lzma.h>

#include "bzimage.h"
#include "core/range.h"

namespace pvmmu::run {

namespace {

uint32_t le32(const uint8_t* p) { return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24; }

// The most memory the XZ decoder may take, its dictionary almost all of it:
// Linux compresses with a 32 MiB one (scripts/xz_wrap.sh), and a header can
// declare up to 4 GiB in a few bytes.
constexpr uint64_t kXzMemLimit = uint64_t(64) << 20;

// The first reservation for the ELF: the size Linux appends, but no more
// than kGuessRatio times the payload (XZ packs a kernel about 5:1) nor the
// limit; the buffer grows past it as the data comes, never zero-filled
// ahead.
constexpr size_t kGuessRatio = 16;

} // namespace

// One XZ stream (Linux appends the unpacked size as 4 more bytes, which end
// the payload after the stream: not a second stream, so no
// LZMA_CONCATENATED), unpacked in chunks; at most max bytes.
bool bzimage_unxz(const uint8_t* p, size_t n, size_t max, std::vector<uint8_t>& out, std::string& why)
{
    lzma_stream s = LZMA_STREAM_INIT;
    if (lzma_stream_decoder(&s, kXzMemLimit, 0) != LZMA_OK) {
        why = "liblzma could not start a decoder";
        return false;
    }
    const size_t declared = n >= 4 ? le32(p + n - 4) : 0;
    out.clear();
    out.reserve(std::min({declared, max, n * kGuessRatio}));
    s.next_in = p;
    s.avail_in = n;
    std::vector<uint8_t> chunk(size_t(1) << 16);
    lzma_ret r;
    bool too_big = false;
    do {
        s.next_out = chunk.data();
        s.avail_out = chunk.size();
        r = lzma_code(&s, LZMA_FINISH);
        const size_t got = chunk.size() - s.avail_out;
        if (!range_within(out.size(), got, 0, max)) {
            too_big = true;
            break;
        }
        out.insert(out.end(), chunk.begin(), chunk.begin() + long(got));
        // LZMA_BUF_ERROR: no progress with all the input given, truncated.
    } while (r == LZMA_OK);
    lzma_end(&s);
    if (r == LZMA_STREAM_END && !too_big) return true;
    out.clear();
    if (too_big)
        why = "the XZ payload unpacks past " + bzimage_size_words(max) + ", the most taken";
    else if (r == LZMA_BUF_ERROR)
        why = "the XZ payload is truncated";
    else if (r == LZMA_MEMLIMIT_ERROR)
        why = "the XZ payload asks for more than " + std::to_string(kXzMemLimit >> 20) +
              " MiB to unpack (LZMA_MEMLIMIT_ERROR: its dictionary)";
    else
        why = "the XZ payload is corrupt (liblzma error " + std::to_string(r) + ")";
    return false;
}

} // namespace pvmmu::run
