// Spin lock for one page-table page (docs/design.md §4: software writers of one page are
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
// A fair (first come, first served) spin lock, for a lock that CPUs running
// different domains share: each waiter is served within one hold of every
// CPU ahead of it, so no domain can starve another's CPU of it, as the
// test-and-set SpinLock could. Used where one guest's calls can keep the
// lock busy (the bare-metal GDT copies, hypervisor/arch/x86_64/pv/descriptors.cc).
class TicketLock {
public:
    void lock(Platform& p)
    {
        const uint32_t me = next_.fetch_add(1, std::memory_order_relaxed);
        while (serving_.load(std::memory_order_acquire) != me)
            p.relax();
    }
    void unlock() { serving_.store(serving_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

private:
    std::atomic<uint32_t> next_{0}, serving_{0};
};

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
