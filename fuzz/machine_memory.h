// Machine memory for the fuzzer, reused from one input to the next: a fresh
// multi-page allocation per input costs more in page faults than the hypercalls
// it serves. Laid out as sim's Arena (hypervisor frames, then I/O frames, then
// domains, bump-allocated) and reset to the same state before every input.
#pragma once

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "core/frame.h"
#include "sim/arena.h"

namespace pvmmu::fuzz {

class MachineMemoryPool {
public:
    explicit MachineMemoryPool(uint64_t nr_frames)
        : nr_frames_(nr_frames),
          base_(static_cast<uint8_t*>(std::aligned_alloc(kPageSize, nr_frames * kPageSize))),
          frames_(new FrameInfo[nr_frames]), m2p_(new uint64_t[nr_frames])
    {
        if (!base_) throw std::bad_alloc();
    }

    // Back to a machine nobody has touched: zeroed memory, free frames except
    // the hypervisor's and the I/O frames, no references.
    void reset()
    {
        std::memset(base_.get(), 0, nr_frames_ * kPageSize);
        std::memset(m2p_.get(), 0, nr_frames_ * sizeof(uint64_t));
        for (uint64_t i = 0; i < nr_frames_; ++i) {
            FrameInfo& f = frames_[i];
            f.type_info.store(0);
            f.count.store(0);
            f.tlbflush_stamp.store(0);
            if (f.lock.locked()) f.lock.unlock();
            const bool xen = i < sim::Arena::kXenFrames, io = !xen && i < sim::Arena::kXenFrames + sim::Arena::kIoFrames;
            f.owner.store(xen ? kOwnerXen : io ? kOwnerIo : kOwnerFree);
        }
        next_free_ = sim::Arena::kXenFrames + sim::Arena::kIoFrames;
    }

    MachineMemory mem() const { return MachineMemory{base_.get(), nr_frames_}; }
    FrameInfo* frames() { return frames_.get(); }
    uint64_t* m2p() { return m2p_.get(); }
    Mfn allocate(uint64_t n)
    {
        const Mfn m{next_free_};
        next_free_ += n;
        return m;
    }

private:
    struct Free {
        void operator()(uint8_t* p) const { std::free(p); }
    };
    uint64_t nr_frames_;
    std::unique_ptr<uint8_t[], Free> base_;
    std::unique_ptr<FrameInfo[]> frames_;
    std::unique_ptr<uint64_t[]> m2p_;
    uint64_t next_free_ = 0;
};

} // namespace pvmmu::fuzz
