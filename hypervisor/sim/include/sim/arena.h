// Machine memory of a hosted machine: an arena of 4 KiB frames with its frame
// table and machine-to-physical table. The first frames belong to the hypervisor
// and the next few are device (I/O) memory, so that guests have something real
// to be refused; domains get contiguous ranges from a bump allocator.
#pragma once

#include <memory>

#include "core/frame.h"

namespace pvmmu::sim {

class Arena {
public:
    static constexpr uint64_t kXenFrames = 16;
    static constexpr uint64_t kIoFrames = 16;

    explicit Arena(uint64_t nr_frames);

    MachineMemory mem() const { return MachineMemory{base_.get(), nr_frames_}; }
    FrameInfo* frames() { return frames_.get(); }
    uint64_t* m2p() { return m2p_.get(); }
    uint64_t nr_frames() const { return nr_frames_; }

    Mfn first_xen_frame() const { return Mfn{0}; }
    Mfn first_io_frame() const { return Mfn{kXenFrames}; }

    // Contiguous free frames for a domain; Mfn{~0} when the arena is exhausted.
    Mfn allocate(uint64_t n);

private:
    struct FreeAligned {
        void operator()(uint8_t* p) const;
    };
    uint64_t nr_frames_;
    std::unique_ptr<uint8_t[], FreeAligned> base_;
    std::unique_ptr<FrameInfo[]> frames_;
    std::unique_ptr<uint64_t[]> m2p_;
    uint64_t next_free_;
};

} // namespace pvmmu::sim
