// Range checks that cannot wrap, for everything that places untrusted input
// (a guest kernel's segments and notes, a bzImage's payload, a domain's
// frames): lengths are compared, never sums, so an address near 2^64 cannot
// wrap a bound to a small number and pass (docs/security.md, "Loader range
// checks"). Header-only and freestanding: the hypervisor, the host tools and
// the tests include it alike.
#pragma once

#include <stdint.h>

namespace pvmmu {

// [x, x + len) lies within [start, start + size).
constexpr bool range_within(uint64_t x, uint64_t len, uint64_t start, uint64_t size)
{
    return x >= start && len <= size && x - start <= size - len;
}

// Byte x lies within [start, start + size).
constexpr bool point_within(uint64_t x, uint64_t start, uint64_t size)
{
    return x >= start && x - start < size;
}

// [a, a + alen) and [b, b + blen) share a byte (empty ranges share none).
constexpr bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return alen && blen && (a <= b ? b - a < alen : a - b < blen);
}

static_assert(range_within(0x1000, 0x1000, 0x1000, 0x1000));
static_assert(!range_within(0xfffffffffffff000, 0x1000, 0x1000, 0x1000));   // the wrapping sum is 0
static_assert(!range_within(0x1000, 0x2000, 0x1000, 0x1000));
static_assert(!range_within(0xfff, 1, 0x1000, 0x1000));
static_assert(range_within(0xffffffff80000000, 0x1000, 0xffffffff80000000, 0x80000000));   // ends at 2^64
static_assert(point_within(0x1fff, 0x1000, 0x1000) && !point_within(0x2000, 0x1000, 0x1000));
static_assert(ranges_overlap(0, 2, 1, 1) && !ranges_overlap(0, 1, 1, 1) && !ranges_overlap(0, 0, 0, 1));
static_assert(ranges_overlap(0xfffffffffffff000, 0x1000, 0xffffffffffffffff, 1));

} // namespace pvmmu
