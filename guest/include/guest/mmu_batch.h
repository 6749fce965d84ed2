// Lazy MMU mode for one page table (SPEC §6): requests for its entries are laid
// out in the vCPU's scratch pages and issued as one mmu_update per `cap`
// requests. The owner issues what is pending (flush()) before it releases the
// table's lock, so no request outlives the lock that made it correct.
#pragma once

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

    unsigned pending() const { return n_; }
    unsigned failed_cmd() const { return failed_cmd_; }

private:
    [[nodiscard]] int put(unsigned cmd, unsigned index, uint64_t val, unsigned first_line, unsigned last_line);
    void clean_lines();

    Cpu& c_;
    Gpfn table_;
    Maddr base_;
    unsigned cap_;
    unsigned n_ = 0;
    unsigned failed_cmd_ = 0;
    uint64_t lines_ = 0;   // 64-byte lines of the table touched since the last clean
    uint8_t cmds_[kMaxBatchRequests];
};

} // namespace pvmmu::guest
