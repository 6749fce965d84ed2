// The guest's array of batch requests as the hypervisor reads it (docs/design.md §3): one
// chunk at a time into hypervisor memory, so each request is read from the guest
// exactly once (what is checked is what is used) and copies are per chunk, not
// per request.
#pragma once

#include "core/platform.h"

namespace pvmmu {

// Bytes of requests per copy, on the hypervisor stack (128 mmu_update_t, 85
// mmuext_op_t). Each copy also costs a fixed part (a platform call; on bare metal
// a guest walk) and a re-entry of the fused loop: at 2 KiB that is under one
// instruction per mmu_update request (perf/, `./pvmmu bench core`).
inline constexpr unsigned kBatchChunkBytes = 2048;

template <class Req>
class RequestReader {
public:
    static constexpr uint32_t kChunk = kBatchChunkBytes / sizeof(Req);
    static_assert(kChunk >= 1);

    RequestReader(Platform& p, Vcpu& v, Vaddr reqs, uint32_t count)
        : plat_(p), v_(v), reqs_(reqs), count_(count) {}
    RequestReader(const RequestReader&) = delete;
    RequestReader& operator=(const RequestReader&) = delete;

    // Requests i .. i + n - 1 (n >= 1: up to the end of the chunk holding i) in
    // hypervisor memory, or nullptr if the guest's array cannot be read there
    // (-EFAULT). i < count, and never goes back: a chunk starts where the last
    // one ended, so where a fault stops the batch does not depend on the reader.
    const Req* at(uint32_t i, uint32_t& n)
    {
        if (i - first_ >= held_) {
            first_ = i;
            held_ = count_ - i < kChunk ? count_ - i : kChunk;
            if (plat_.copy_from_guest(v_, buf_, Vaddr{reqs_.v + uint64_t(i) * sizeof(Req)},
                                      held_ * sizeof(Req))) {
                held_ = 0;
                return nullptr;
            }
        }
        n = first_ + held_ - i;
        return buf_ + (i - first_);
    }

    // Requests [i, end) chunk by chunk through `chunk(r, n, rc)`, which
    // returns how many of its n requests it completed (and in rc the errno of
    // the one that failed, if one did); stops at the first chunk not completed
    // whole, or at a chunk that cannot be read (-EFAULT). `did`: the requests
    // completed. The fused runs' loop (l1_run.cc, mmu_update.cc plain_run).
    template <class Chunk>
    int run(uint32_t i, uint32_t end, uint32_t& did, Chunk&& chunk)
    {
        const uint32_t first = i;
        int rc = 0;
        while (i < end) {
            uint32_t n;
            const Req* r = at(i, n);
            if (!r) {
                rc = -XEN_EFAULT;
                break;
            }
            if (n > end - i) n = end - i;
            const uint32_t k = chunk(r, n, rc);
            i += k;
            if (k < n) break;
        }
        did = i - first;
        return rc;
    }

private:
    Platform& plat_;
    Vcpu& v_;
    Vaddr reqs_;
    uint32_t count_;
    uint32_t first_ = 0, held_ = 0;   // buf_ holds requests [first_, first_ + held_)
    Req buf_[kChunk];
};

} // namespace pvmmu
