// One vCPU as the guest library sees it: its two platform interfaces, its scratch
// pages in guest memory (hypercall argument arrays must live there), and its
// event counters. Every library call takes the Cpu it runs on.
#pragma once

#include <atomic>

#include "guest/platform.h"

namespace pvmmu::guest {

class Guest;

// A counter written by one vCPU and read by any: relaxed, no locked operation on
// the hot path (a single writer needs none).
class Counter {
public:
    void operator++() { add(1); }
    void add(uint64_t n) { v_.store(v_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
    uint64_t get() const { return v_.load(std::memory_order_relaxed); }
    void reset() { v_.store(0, std::memory_order_relaxed); }

private:
    std::atomic<uint64_t> v_{0};
};

// Events of one vCPU (docs/design.md §6: faults, spurious faults, local and remote
// flushes, cleans), plus the hypercall traffic the batching tests count.
struct CpuStats {
    Counter faults;            // page faults that reached the library's handler
    Counter spurious;          // ...whose PTE already allowed the access
    Counter spurious_write;    // ...of those, write or exec faults (local entry flushed)
    Counter spurious_read;     // ...of those, read faults
    Counter demand_zero;       // ...that mapped a fresh zero page
    Counter denied;            // ...that the address space does not allow (access fails)
    Counter flush_local;       // flushes of this vCPU's TLB only (one per operation)
    Counter flush_remote;      // flushes that reach other vCPUs (one per operation)
    Counter invlpg_pages;      // single-page invalidations inside those flushes
    Counter cleans;            // cache cleans for a non-coherent walker
    Counter hypercalls;        // every hypercall the library issued
    Counter mmu_update_calls;  // mmu_update hypercalls, direct or a multicall's one entry
    Counter multicalls;        // multicall hypercalls
    Counter mmuext_calls;      // mmuext_op hypercalls
    Counter req[8];            // mmu_update requests issued, by command (ptr & 7)
    Counter downgrades;        // feature levels dropped after -ENOSYS / -EPERM
};

// Scratch pages per vCPU: request pages, then one page of small arguments.
inline constexpr unsigned kScratchReqPages = 4;
inline constexpr unsigned kScratchPages = kScratchReqPages + 1;
inline constexpr unsigned kMaxBatchRequests = kScratchReqPages * kPageSize / 16;   // mmu_update_t
namespace scratch {
inline constexpr uint64_t kDone = kScratchReqPages * kPageSize;   // pdone (uint32_t)
inline constexpr uint64_t kMask = kDone + 8;                      // a vCPU bitmap
inline constexpr uint64_t kWord = kDone + 16;                     // one spare argument word
inline constexpr uint64_t kOps = kDone + 64;                      // mmuext_op_t array
inline constexpr unsigned kMaxOps = unsigned((kPageSize - 64) / 24);
// A multicall_entry_t wrapping an mmu_update (MmuConfig::multicall): never in
// use together with an mmuext_op array.
inline constexpr uint64_t kMulticall = kOps;
} // namespace scratch

struct Cpu {
    Cpu(Transport& t, Memory& m, unsigned vcpu) : hc(t), mem(m), id(vcpu) {}
    Cpu(const Cpu&) = delete;
    Cpu& operator=(const Cpu&) = delete;

    Transport& hc;
    Memory& mem;
    unsigned id;               // vCPU number in the domain
    Guest* guest = nullptr;    // set by Guest::attach
    Va scratch{0};             // kScratchPages pages, mapped writable in the physmap
    bool in_fault = false;     // the handler is running (a nested fault is not fixed)
    Va physmap_fix{0};         // the physmap page fixed last (Guest::fix_physmap_fault)
    unsigned physmap_fixes = 0;   // ...how many times in a row
    CpuStats stats;

    Va scratch_at(uint64_t off) const { return scratch + off; }
};

} // namespace pvmmu::guest
