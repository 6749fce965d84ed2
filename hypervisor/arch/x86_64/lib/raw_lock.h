// A spin lock for the platform's own short critical sections (console, boot
// allocator). The core's SpinLock serves shootdowns while it spins through the
// Platform; this one is for code below the Platform, so it only pauses. It
// records its owner so a CPU can tell that it already holds it (panic path).
#pragma once

#include <atomic>
#include <stdint.h>

#include "cpu/x86.h"

namespace pvmmu::x86 {

class RawLock {
public:
    static constexpr uint32_t kNoOwner = ~0u;

    void lock(uint32_t cpu)
    {
        uint32_t expected = kNoOwner;
        while (!owner_.compare_exchange_weak(expected, cpu, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
            expected = kNoOwner;
            while (owner_.load(std::memory_order_relaxed) != kNoOwner) pause();
        }
    }
    bool try_lock(uint32_t cpu)
    {
        uint32_t expected = kNoOwner;
        return owner_.load(std::memory_order_relaxed) == kNoOwner &&
               owner_.compare_exchange_strong(expected, cpu, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    void unlock() { owner_.store(kNoOwner, std::memory_order_release); }
    bool held_by(uint32_t cpu) const { return owner_.load(std::memory_order_relaxed) == cpu; }

private:
    std::atomic<uint32_t> owner_{kNoOwner};
};

} // namespace pvmmu::x86
