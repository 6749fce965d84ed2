// Arena of machine frames; see sim/arena.h.
#include "sim/arena.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace pvmmu::sim {

void Arena::FreeAligned::operator()(uint8_t* p) const { std::free(p); }

Arena::Arena(uint64_t nr_frames)
    : nr_frames_(nr_frames),
      base_(static_cast<uint8_t*>(std::aligned_alloc(kPageSize, nr_frames * kPageSize))),
      frames_(new FrameInfo[nr_frames]),
      m2p_(new uint64_t[nr_frames]()),
      next_free_(kXenFrames + kIoFrames)
{
    if (!base_) throw std::bad_alloc();
    std::memset(base_.get(), 0, nr_frames * kPageSize);
    for (uint64_t i = 0; i < kXenFrames && i < nr_frames; ++i) frames_[i].owner.store(kOwnerXen);
    for (uint64_t i = kXenFrames; i < kXenFrames + kIoFrames && i < nr_frames; ++i)
        frames_[i].owner.store(kOwnerIo);
}

Mfn Arena::allocate(uint64_t n)
{
    if (n > nr_frames_ - next_free_) return Mfn{~0ull};
    const Mfn m{next_free_};
    next_free_ += n;
    return m;
}

} // namespace pvmmu::sim
