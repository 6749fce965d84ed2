// The guest frame allocator; see guest/frame_alloc.h.
#include "guest/frame_alloc.h"

namespace pvmmu::guest {

bool FrameAllocator::init(Gpfn first, Gpfn end)
{
    if (end.v > kMaxFrames || first.v > end.v) return false;
    first_ = hint_ = first.v;
    end_ = end.v;
    for (uint64_t g = first_; g < end_; ++g) set(g, true);
    free_.store(end_ - first_, std::memory_order_relaxed);
    return true;
}

void FrameAllocator::set(uint64_t g, bool free_bit)
{
    const uint64_t bit = 1ull << (g % 64);
    bits_[g / 64] = free_bit ? bits_[g / 64] | bit : bits_[g / 64] & ~bit;
}

bool FrameAllocator::run_free(uint64_t g, unsigned n) const
{
    if (g + n > end_) return false;
    for (unsigned i = 0; i < n; ++i)
        if (!is_free(g + i)) return false;
    return true;
}

bool FrameAllocator::alloc(Cpu& c, unsigned n, Gpfn& out)
{
    if (n == 0) return false;
    SpinGuard g(c, lock_);
    // Candidate starts from the hint to the end, then from the start to the hint.
    const uint64_t ranges[2][2] = {{hint_, end_}, {first_, hint_}};
    for (const auto& r : ranges) {
        for (uint64_t f = r[0]; f < r[1]; ++f) {
            if (!run_free(f, n)) continue;
            for (unsigned i = 0; i < n; ++i) set(f + i, false);
            hint_ = f + n < end_ ? f + n : first_;
            free_.fetch_sub(n, std::memory_order_relaxed);
            out = Gpfn{f};
            return true;
        }
    }
    return false;
}

void FrameAllocator::free(Cpu& c, Gpfn first, unsigned n)
{
    SpinGuard g(c, lock_);
    for (unsigned i = 0; i < n; ++i) {
        const uint64_t f = first.v + i;
        if (f < first_ || f >= end_ || is_free(f)) continue;   // not ours, or a double free
        set(f, true);
        free_.fetch_add(1, std::memory_order_relaxed);
    }
    // The lowest freed frame is handed out first: reuse keeps the footprint
    // (and, on hardware, the caches) small.
    if (first.v >= first_ && first.v < hint_) hint_ = first.v;
}

bool FrameAllocator::reserve(Cpu& c, Gpfn first, unsigned n)
{
    SpinGuard g(c, lock_);
    if (first.v < first_ || !run_free(first.v, n)) return false;
    for (unsigned i = 0; i < n; ++i) set(first.v + i, false);
    free_.fetch_sub(n, std::memory_order_relaxed);
    return true;
}

} // namespace pvmmu::guest
