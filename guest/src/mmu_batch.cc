// Lazy MMU mode for one page table; see guest/mmu_batch.h.
#include "guest/mmu_batch.h"

#include "guest/hypercalls.h"

namespace pvmmu::guest {

static_assert(kEntriesPerTable / kPteLine == 64, "one bit per 64-byte line of a table");

MmuBatch::MmuBatch(Cpu& c, Gpfn table, unsigned cap)
    : c_(c), table_(table), base_(maddr_of(c.guest->mfn(table))),
      cap_(cap == 0 ? 1 : cap > kMaxBatchRequests ? kMaxBatchRequests : cap),
      coherent_(c.guest->boot().coherent_walker)
{
}

// In place, the window is the whole batch; staged, the stage or what is left
// of the batch's cap.
void MmuBatch::open_window()
{
    const unsigned room = cap_ - written_;
    at_ = window_;
    end_ = window_ + 2 * (window_ == stage_ && room > kStage ? kStage : room);
}

int MmuBatch::make_room()
{
    if (!window_) {   // the pages the batch can fill, asked for once it has something to write
        uint64_t* in_place = c_.mem.direct(c_.scratch, uint64_t(cap_) * sizeof(mmu_update_t));
        window_ = in_place ? in_place : stage_;
        open_window();
        return 0;
    }
    if (pending() == cap_) return flush();
    return write_staged() ? 0 : -XEN_EFAULT;
}

// The staged requests, the batch's last ones, to their places in the scratch
// pages. If that faults they are dropped: the batch holds only requests in place.
bool MmuBatch::write_staged()
{
    const unsigned staged = unsigned(at_ - window_) / 2;
    if (window_ != stage_ || staged == 0) return true;   // in place already
    static_assert(sizeof(mmu_update_t) == 16);
    const bool ok = c_.mem.store_words(c_.scratch + uint64_t(written_) * sizeof(mmu_update_t), stage_, 2 * staged);
    if (ok)
        written_ += staged;
    else
        for (unsigned i = 0; i < staged; ++i) --per_cmd_[stage_[2 * i] & PVMMU_MMU_CMD_MASK];
    open_window();
    return ok;
}

int MmuBatch::add_range(unsigned index, uint64_t mask, uint64_t bits, unsigned count)
{
    if (count == 0) return 0;
    if (index + count > kEntriesPerTable || !abi::encodable(mask, bits & mask, count)) return -XEN_EINVAL;
    return put(MMU_FLAG_RANGE_UPDATE, index, abi::encode_flag_range(mask, bits & mask, count),
               index / kPteLine, (index + count - 1) / kPteLine);
}

void MmuBatch::clean_lines()
{
    // Only the lines touched: on a coherent walker lines_ is 0 and this is a
    // test, not 64 rounds of one (each flush of a batch comes through here).
    if (!lines_) return;
    const Va va = c_.guest->va(table_);
    for (uint64_t left = lines_; left; left &= left - 1) {
        const unsigned l = unsigned(__builtin_ctzll(left));
        c_.mem.clean(va + l * kPteLine * sizeof(uint64_t));
        ++c_.stats.cleans;
    }
    lines_ = 0;
}

int MmuBatch::flush()
{
    if (pending() == 0) return 0;
    const bool written = write_staged();
    const unsigned n = pending();
    written_ = 0;
    open_window();
    failed_cmd_ = 0;
    for (unsigned cmd = 0; cmd < 8; ++cmd) {
        if (written && per_cmd_[cmd]) c_.stats.req[cmd].add(per_cmd_[cmd]);
        per_cmd_[cmd] = 0;
    }
    if (!written) return -XEN_EFAULT;   // (a scratch page faulted: nothing issued)
    uint32_t done = 0;
    const long rc = mmu_update_scratch(c_, n, &done);
    // Cleaned whatever the outcome: the requests before a failure did change.
    clean_lines();
    // The failed request's command is in its ptr's low bits, in the scratch page.
    uint64_t ptr = 0;
    if (rc && done < n && c_.mem.load(c_.scratch + uint64_t(done) * sizeof(mmu_update_t), ptr))
        failed_cmd_ = unsigned(ptr & PVMMU_MMU_CMD_MASK);
    return int(rc);
}

} // namespace pvmmu::guest
