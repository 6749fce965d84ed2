// A spin lock for guest code. Waiting is an interrupt point (Transport::relax),
// so a vCPU spinning here still serves the TLB shootdown that the lock holder
// may be waiting for — otherwise holder and waiter would wait on each other.
// A ticket lock, so it is fair: a vCPU that calls mprotect in a loop cannot
// starve the fault handlers of the others (an exchange lock did, on the sim).
#pragma once

#include <atomic>

#include "guest/cpu.h"

namespace pvmmu::guest {

class SpinLock {
public:
    void lock(Cpu& c)
    {
        const uint32_t me = next_.fetch_add(1, std::memory_order_relaxed);
        while (owner_.load(std::memory_order_acquire) != me) c.hc.relax();
    }
    void unlock() { owner_.store(owner_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

private:
    std::atomic<uint32_t> next_{0};
    std::atomic<uint32_t> owner_{0};
};

class SpinGuard {
public:
    SpinGuard(Cpu& c, SpinLock& l) : l_(l) { l_.lock(c); }
    ~SpinGuard() { l_.unlock(); }
    SpinGuard(const SpinGuard&) = delete;
    SpinGuard& operator=(const SpinGuard&) = delete;

private:
    SpinLock& l_;
};

} // namespace pvmmu::guest
