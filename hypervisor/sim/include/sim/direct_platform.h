// A one-CPU platform whose guest virtual addresses are host addresses: the test
// double for unit tests of the core and for counting the core's instructions
// (perf/). Copies are memcpy (addresses below 64 KiB fault, as an unmapped low
// region would); flushes are recorded, not performed; full flushes advance the
// TLB clock as a real flush would.
#pragma once

#include <cstring>
#include <functional>
#include <vector>

#include <pvmmu/abi.h>

#include "core/hypervisor.h"
#include "core/platform.h"

namespace pvmmu::sim {

class DirectPlatform final : public Platform {
public:
    static constexpr uint64_t kUnmappedBelow = 0x10000;

    struct Flush {
        CpuMask cpus;
        FlushRequest req;
    };

    void attach(Hypervisor& hv) { hv_ = &hv; }

    void flush_tlbs(CpuMask cpus, FlushRequest req) override
    {
        flushes.push_back(Flush{cpus, req});
        if (on_flush) on_flush();
        if (req.kind != FlushKind::All || !hv_) return;
        for (CpuId c = 0; c < kMaxCpus; ++c) {
            if (!cpus.has(c)) continue;
            const uint64_t t = hv_->clock().begin_flush();
            hv_->clock().record_flush(c, t);
        }
    }
    void relax() override {}
    int copy_from_guest(Vcpu&, void* dst, Vaddr src, size_t n) override
    {
        if (src.v < kUnmappedBelow) return -XEN_EFAULT;
        std::memcpy(dst, reinterpret_cast<const void*>(src.v), n);
        return 0;
    }
    int copy_to_guest(Vcpu&, Vaddr dst, const void* src, size_t n) override
    {
        if (dst.v < kUnmappedBelow) return -XEN_EFAULT;
        std::memcpy(reinterpret_cast<void*>(dst.v), src, n);
        return 0;
    }
    void load_base(Vcpu&) override { ++base_loads; }
    uint64_t reserved_l4_entry(DomId, unsigned slot) const override { return reserved_l4[slot % 512]; }
    // A test's stand-in for a platform's own hypercalls; none: the default (-ENOSYS).
    HcResult arch_hypercall(Vcpu& v, HypercallFrame& f) override
    {
        return arch ? arch(v, f) : Platform::arch_hypercall(v, f);
    }
    std::function<HcResult(Vcpu&, HypercallFrame&)> arch;

    std::vector<Flush> flushes;
    unsigned base_loads = 0;
    // What validated L4s get in the hypervisor's slots (bare metal's own entries).
    uint64_t reserved_l4[512] = {};
    // Runs inside every flush: lets a test act as another CPU at that instant.
    std::function<void()> on_flush;

private:
    Hypervisor* hv_ = nullptr;
};

} // namespace pvmmu::sim
