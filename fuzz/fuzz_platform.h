// The platform the hypercall fuzzer runs the core on. Like sim's DirectPlatform
// (one CPU, guest virtual addresses are host addresses), except that guest
// memory is only what the harness registered: any other address is -EFAULT
// instead of a host crash, so the fuzzer may pass any pointer, count or flush
// target and still find only the core's bugs.
#pragma once

#include <atomic>
#include <cstring>

#include <pvmmu/abi.h>

#include "core/event_ops.h"
#include "core/hypervisor.h"
#include "core/platform.h"

namespace pvmmu::fuzz {

class FuzzPlatform final : public Platform {
public:
    void attach(Hypervisor& hv) { hv_ = &hv; }
    void set_guest_memory(void* base, size_t len)
    {
        base_ = reinterpret_cast<uintptr_t>(base);
        len_ = len;
    }

    void flush_tlbs(CpuMask cpus, FlushRequest req) override
    {
        ++flushes;
        // As a real full flush: advance the TLB clock for every CPU named.
        if (req.kind != FlushKind::All || !hv_) return;
        for (CpuId c = 0; c < kMaxCpus; ++c) {
            if (!cpus.has(c)) continue;
            hv_->clock().record_flush(c, hv_->clock().begin_flush());
        }
    }
    void relax() override {}
    int copy_from_guest(Vcpu&, void* dst, Vaddr src, size_t n) override
    {
        if (!inside(src.v, n)) return -XEN_EFAULT;
        std::memcpy(dst, reinterpret_cast<const void*>(src.v), n);
        return 0;
    }
    int copy_to_guest(Vcpu&, Vaddr dst, const void* src, size_t n) override
    {
        if (!inside(dst.v, n)) return -XEN_EFAULT;
        std::memcpy(reinterpret_cast<void*>(dst.v), src, n);
        return 0;
    }
    void load_base(Vcpu&) override { ++base_loads; }
    // The event, timer and scheduling hypercalls (core/event_ops.h) on a
    // clock that advances 1 ms a call. A vCPU left blocked is taken to its
    // next deadline, as its timer interrupt would; with none bound it stays
    // blocked, and the invariant checker watches that no event it should
    // have woken on is lost.
    HcResult arch_hypercall(Vcpu& v, HypercallFrame& f) override
    {
        if (!hv_) return Platform::arch_hypercall(v, f);
        EventOut out;
        now_ns += 1'000'000;
        const HcResult r = event_hypercall(*hv_, v, f, now_ns, out);
        if (out.block && vcpu_blocked(v)) {
            const uint64_t next = next_deadline(v);
            if (next != kNever && next > now_ns) now_ns = next;
        }
        (void)timer_expire(*hv_, v, now_ns);
        return r;
    }
    uint64_t now_ns = 0;

    // Whether [a, a + n) is guest memory.
    bool inside(uint64_t a, size_t n) const { return a >= base_ && n <= len_ && a - base_ <= len_ - n; }

    uint64_t flushes = 0;
    uint64_t base_loads = 0;

private:

    Hypervisor* hv_ = nullptr;
    uintptr_t base_ = 0;
    size_t len_ = 0;
};

} // namespace pvmmu::fuzz
