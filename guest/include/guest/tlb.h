// TLB flush policy (docs/design.md §6): a permission reduction is flushed once per
// mprotect call, page by page (INVLPG) up to a threshold and whole beyond it,
// only on the vCPUs that may hold the address space. Raises are never flushed
// preventively: a stale entry that still denies an access is fixed when it
// faults (seed 004).
#pragma once

#include "guest/cpu.h"

namespace pvmmu::guest {

// The pages whose access an operation reduced, or "the whole TLB" once there
// are more than the threshold.
class FlushPlan {
public:
    static constexpr unsigned kMaxPages = scratch::kMaxOps;

    explicit FlushPlan(unsigned threshold) : threshold_(threshold < kMaxPages ? threshold : kMaxPages) {}

    void add(Va page)
    {
        ++reduced_;
        if (n_ < threshold_) pages_[n_++] = page;
        else whole_ = true;
    }
    bool empty() const { return reduced_ == 0; }
    bool whole() const { return whole_; }
    unsigned pages() const { return n_; }
    Va page(unsigned i) const { return pages_[i]; }
    uint64_t reduced() const { return reduced_; }

private:
    unsigned threshold_;
    unsigned n_ = 0;
    bool whole_ = false;
    uint64_t reduced_ = 0;
    Va pages_[kMaxPages];
};

// Carries out the plan on the vCPUs of `vcpus` (a bitmap of vCPU numbers): with
// the *_LOCAL operations when that is the caller alone, *_MULTI otherwise, all in
// one mmuext_op. Counted once, as a local or a remote flush.
[[nodiscard]] int flush_tlb(Cpu& c, const FlushPlan& plan, uint64_t vcpus);

// Drops this vCPU's TLB entry for one page (the spurious-fault fix).
[[nodiscard]] int flush_local_page(Cpu& c, Va va);

} // namespace pvmmu::guest
