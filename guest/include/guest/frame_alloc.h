// The guest's frame allocator: the domain's free gpfns (those above the
// builder's page tables) for page tables, demand-zero pages and scratch pages.
// A bitmap in the guest's own data, no heap; first fit from a hint that moves
// on past each allocation and back to the lowest frame freed.
#pragma once

#include "guest/spinlock.h"

namespace pvmmu::guest {

class FrameAllocator {
public:
    static constexpr uint64_t kMaxFrames = 1ull << 18;   // 1 GiB of guest memory

    // Frames [first, end) become allocatable. false if end is beyond kMaxFrames.
    [[nodiscard]] bool init(Gpfn first, Gpfn end);

    // n contiguous free frames (so their physmap addresses are contiguous too).
    [[nodiscard]] bool alloc(Cpu& c, unsigned n, Gpfn& out);
    void free(Cpu& c, Gpfn first, unsigned n = 1);

    // Takes specific frames out of the pool (a test that wants fixed gpfns).
    [[nodiscard]] bool reserve(Cpu& c, Gpfn first, unsigned n);

    Gpfn first() const { return Gpfn{first_}; }
    uint64_t nr_free() const { return free_.load(std::memory_order_relaxed); }

private:
    bool is_free(uint64_t g) const { return (bits_[g / 64] >> (g % 64)) & 1; }
    void set(uint64_t g, bool free_bit);
    bool run_free(uint64_t g, unsigned n) const;

    SpinLock lock_;
    uint64_t first_ = 0, end_ = 0, hint_ = 0;
    std::atomic<uint64_t> free_{0};
    uint64_t bits_[kMaxFrames / 64] = {};   // 1 = free
};

} // namespace pvmmu::guest
