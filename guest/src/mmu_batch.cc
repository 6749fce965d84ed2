// Lazy MMU mode for one page table; see guest/mmu_batch.h.
#include "guest/mmu_batch.h"

#include "guest/hypercalls.h"

namespace pvmmu::guest {

static_assert(kEntriesPerTable / kPteLine == 64, "one bit per 64-byte line of a table");

MmuBatch::MmuBatch(Cpu& c, Gpfn table, unsigned cap)
    : c_(c), table_(table), base_(maddr_of(c.guest->mfn(table))),
      cap_(cap == 0 ? 1 : cap > kMaxBatchRequests ? kMaxBatchRequests : cap)
{
}

int MmuBatch::put(unsigned cmd, unsigned index, uint64_t val, unsigned first_line, unsigned last_line)
{
    if (n_ == cap_) {
        if (int rc = flush()) return rc;
    }
    if (!put_mmu_req(c_, n_, (base_.v + index * sizeof(uint64_t)) | cmd, val)) return -XEN_EFAULT;
    cmds_[n_++] = uint8_t(cmd);
    for (unsigned l = first_line; l <= last_line; ++l) lines_ |= 1ull << l;
    return 0;
}

int MmuBatch::add(unsigned cmd, unsigned index, uint64_t val)
{
    if (index >= kEntriesPerTable) return -XEN_EINVAL;
    return put(cmd, index, val, index / kPteLine, index / kPteLine);
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
    if (c_.guest->boot().coherent_walker) {
        lines_ = 0;
        return;
    }
    const Va va = c_.guest->va(table_);
    for (unsigned l = 0; l < 64; ++l) {
        if (!((lines_ >> l) & 1)) continue;
        c_.mem.clean(va + l * kPteLine * sizeof(uint64_t));
        ++c_.stats.cleans;
    }
    lines_ = 0;
}

int MmuBatch::flush()
{
    if (n_ == 0) return 0;
    for (unsigned i = 0; i < n_; ++i) ++c_.stats.req[cmds_[i]];
    uint32_t done = 0;
    const long rc = mmu_update_scratch(c_, n_, &done);
    // Cleaned whatever the outcome: the requests before a failure did change.
    clean_lines();
    failed_cmd_ = rc && done < n_ ? cmds_[done] : 0;
    n_ = 0;
    return int(rc);
}

} // namespace pvmmu::guest
