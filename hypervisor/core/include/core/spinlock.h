// Spin lock for one page-table page (SPEC §4: software writers of one page are
// serialized per page; there is no domain-wide lock). While it spins it lets the
// platform serve TLB-shootdown requests, so a CPU that waits here never blocks a
// CPU that waits for its acknowledgement.
#pragma once

#include <atomic>

#include "core/platform.h"

namespace pvmmu {

class SpinLock {
public:
    void lock(Platform& p)
    {
        while (flag_.exchange(true, std::memory_order_acquire)) {
            while (flag_.load(std::memory_order_relaxed))
                p.relax();
        }
    }
    void unlock() { flag_.store(false, std::memory_order_release); }
    bool locked() const { return flag_.load(std::memory_order_relaxed); }

private:
    std::atomic<bool> flag_{false};
};

// Scoped holder; movable so a batch can keep one page locked across requests.
class LockGuard {
public:
    LockGuard() = default;
    LockGuard(SpinLock& l, Platform& p) : l_(&l) { l.lock(p); }
    LockGuard(const LockGuard&) = delete;
    LockGuard& operator=(const LockGuard&) = delete;
    ~LockGuard() { release(); }
    void release()
    {
        if (l_) l_->unlock();
        l_ = nullptr;
    }

private:
    SpinLock* l_ = nullptr;
};

} // namespace pvmmu
