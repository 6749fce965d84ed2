// What a vCPU asked of the hypervisor, counted per call (never per entry), for
// PVMMUOP_vcpu_calls (docs/abi.md §10 "pvmmu_op"). Each counter is written
// only on the CPU its vCPU is pinned to, so an increment is a relaxed load and
// store, no locked instruction; a reader on another CPU sees a recent value.
#pragma once

#include <atomic>
#include <cstdint>

namespace pvmmu {

struct CallCounters {
    std::atomic<uint64_t> hypercalls{0};          // top-level calls finished (the platform's entry counts them)
    std::atomic<uint64_t> continuations{0};       // rounds a call was preempted and entered again
    std::atomic<uint64_t> multicalls{0};          // top-level multicalls finished
    std::atomic<uint64_t> multicall_entries{0};   // entries a multicall ran
    std::atomic<uint64_t> mmu_updates{0};         // mmu_update calls, direct or in a multicall
    std::atomic<uint64_t> mmu_update_requests{0};   // the requests those calls handed in
    std::atomic<uint64_t> pt_writes{0};           // page-table writes emulated (the platform's #PF path)
};

// One writer per counter (its vCPU's CPU): no read-modify-write needed.
inline void count(std::atomic<uint64_t>& c, uint64_t n = 1)
{
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

} // namespace pvmmu
