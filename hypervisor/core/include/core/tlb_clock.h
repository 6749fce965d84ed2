// TLB-flush timestamps (docs/design.md §4; Xen's tlbflush clock): a frame may change type only
// when no TLB can still hold a writable translation to it or a walk through it. Each
// frame is stamped when its last mapping or link goes; each CPU records when it last
// flushed its whole TLB. A CPU whose last full flush began before a frame's stamp may
// still cache the old translation and is flushed before the type changes.
#pragma once

#include <atomic>

#include "core/types.h"

namespace pvmmu {

class TlbClock {
public:
    // The time to store in a frame whose last reference is about to go.
    uint64_t now() const { return clock_.load(std::memory_order_seq_cst); }

    // A CPU is about to flush its whole TLB; returns the time to record after it.
    uint64_t begin_flush() { return clock_.fetch_add(1, std::memory_order_seq_cst) + 1; }
    void record_flush(CpuId cpu, uint64_t t) { cpu_time_[cpu].store(t, std::memory_order_release); }

    // CPUs among `candidates` that may still hold a translation older than `stamp`.
    CpuMask needing_flush(CpuMask candidates, uint64_t stamp) const
    {
        CpuMask out;
        for (CpuId c = 0; c < kMaxCpus; ++c)
            if (candidates.has(c) && cpu_time_[c].load(std::memory_order_acquire) <= stamp)
                out.set(c);
        return out;
    }

private:
    // Starts at 1 and every CPU at 1: a TLB is empty at boot, frames start at 0.
    std::atomic<uint64_t> clock_{1};
    std::atomic<uint64_t> cpu_time_[kMaxCpus] = {};

public:
    TlbClock()
    {
        for (auto& t : cpu_time_) t.store(1, std::memory_order_relaxed);
    }
};

} // namespace pvmmu
