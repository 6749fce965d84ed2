// Lazy MMU mode for one page table (docs/design.md §6): requests for its entries are laid
// out in the vCPU's scratch pages and issued as one mmu_update per `cap`
// requests. The owner issues what is pending (flush()) before it releases the
// table's lock, so no request outlives the lock that made it correct.
//
// From its first request to its flush a batch owns the vCPU's request pages
// (the requests may already be in place there): nothing else on that vCPU
// may use them meanwhile, no second batch and no single-request hypercall
// (hypercalls.h's put_mmu_req).
#pragma once

#include <atomic>

#include "guest/guest.h"

namespace pvmmu::guest {

class MmuBatch {
public:
    // cap: requests per hypercall (clamped to the scratch pages' capacity).
    MmuBatch(Cpu& c, Gpfn table, unsigned cap);
    MmuBatch(const MmuBatch&) = delete;
    MmuBatch& operator=(const MmuBatch&) = delete;

    // A cmd-0/1/2 request for entry `index`; issues the batch first when full.
    [[nodiscard]] int add(unsigned cmd, unsigned index, uint64_t val);
    // An MMU_FLAG_RANGE_UPDATE of entries [index, index + count): each present
    // one becomes (cur & ~mask) | bits.
    [[nodiscard]] int add_range(unsigned index, uint64_t mask, uint64_t bits, unsigned count);
    // Issues what is pending. On failure, failed_cmd() is the command of the
    // request that failed (Xen: requests before it were done, after it not).
    [[nodiscard]] int flush();

    unsigned pending() const { return written_ + unsigned(at_ - window_) / 2; }
    unsigned failed_cmd() const { return failed_cmd_; }

private:
    // Requests are laid out at a cursor: in place in the scratch pages where
    // the library can store to them itself (Memory::direct), else in stage_,
    // copied to the scratch pages kStage at a time (one Memory::store_words),
    // not with two stores each.
    static constexpr unsigned kStage = 32;
    static_assert(kPageSize % (kStage * 16) == 0, "a staged block never straddles a scratch page");

    [[nodiscard]] int put(unsigned cmd, unsigned index, uint64_t val, unsigned first_line, unsigned last_line);
    // at_ == end_: chooses the window (the first request), issues a full
    // batch, or writes a full stage.
    [[nodiscard]] int make_room();
    [[nodiscard]] bool write_staged();
    void open_window();   // at_, end_ for the requests after the written_ ones
    void clean_lines();

    Cpu& c_;
    Gpfn table_;
    Maddr base_;
    unsigned cap_;
    bool coherent_;          // the walker needs no cleans: lines_ stays 0
    unsigned failed_cmd_ = 0;
    uint64_t lines_ = 0;     // 64-byte lines of the table touched since the last clean
    unsigned per_cmd_[8] = {};   // the batch's requests by command, for CpuStats::req
    uint64_t stage_[2 * kStage];
    uint64_t* window_ = nullptr;  // where at_ runs: the scratch pages themselves, or stage_;
                                  // chosen at the first request (nullptr: none yet)
    unsigned written_ = 0;    // requests of the batch before the window (copied from it)
    uint64_t* at_ = nullptr;  // the next request's two words
    uint64_t* end_ = nullptr; // the window's end: the stage's, or the batch's cap
};

// add() and put() run once per changed entry: inline, the rare paths (a full
// batch, a full stage) out of line.

inline int MmuBatch::add(unsigned cmd, unsigned index, uint64_t val)
{
    if (index >= kEntriesPerTable) return -XEN_EINVAL;
    return put(cmd, index, val, index / kPteLine, index / kPteLine);
}

inline int MmuBatch::put(unsigned cmd, unsigned index, uint64_t val, unsigned first_line, unsigned last_line)
{
    if (at_ == end_) {
        if (int rc = make_room()) return rc;
    }
    // Atomic (a plain store on x86): in place, the words are guest memory,
    // which other vCPUs' code could touch too.
    std::atomic_ref<uint64_t>(at_[0]).store((base_.v + index * sizeof(uint64_t)) | cmd, std::memory_order_relaxed);
    std::atomic_ref<uint64_t>(at_[1]).store(val, std::memory_order_relaxed);
    at_ += 2;
    ++per_cmd_[cmd];
    if (!coherent_)
        for (unsigned l = first_line; l <= last_line; ++l) lines_ |= 1ull << l;
    return 0;
}

} // namespace pvmmu::guest
