// The fuzzer's input as a stream of choices: each read takes the next bytes,
// little-endian, and an exhausted input reads as zeros, so every byte string is
// a valid program and a short one simply ends early.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace pvmmu::fuzz {

class Input {
public:
    Input(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

    bool empty() const { return p_ == end_; }
    uint8_t u8() { return p_ == end_ ? 0 : *p_++; }
    uint16_t u16() { return uint16_t(u8() | unsigned(u8()) << 8); }
    uint32_t u32() { return u16() | uint32_t(u16()) << 16; }
    uint64_t u64() { return u32() | uint64_t(u32()) << 32; }

    // One of the n values of a table.
    template <class T, size_t N>
    T pick(const T (&table)[N])
    {
        return table[u8() % N];
    }

private:
    const uint8_t* p_;
    const uint8_t* end_;
};

} // namespace pvmmu::fuzz
