// The Platform the core calls on bare metal (core/platform.h): TLB shootdown
// by LAPIC IPIs (cpu/shootdown.h), guest memory through the running vCPU's page
// tables with fault fixup, CR3 loads, and the hypervisor's L4 slots in every
// guest L4.
#pragma once

#include "core/platform.h"

namespace pvmmu::x86 {

class BareMetal final : public Platform {
public:
    void flush_tlbs(CpuMask cpus, FlushRequest req) override;
    void relax() override;
    int copy_from_guest(Vcpu& v, void* dst, Vaddr src, size_t n) override;
    int copy_to_guest(Vcpu& v, Vaddr dst, const void* src, size_t n) override;
    void load_base(Vcpu& v) override;
    uint64_t reserved_l4_entry(DomId owner, unsigned slot) const override;
    int set_ldt(Vcpu& v, Vaddr base, uint32_t ents) override;
    // The bare-metal hypercalls (pv/hypercall.cc's table).
    HcResult arch_hypercall(Vcpu& v, HypercallFrame& f) override;
    // tables_written: x86 page walkers are coherent with the data cache, so
    // the core's default (nothing to clean) is right here.
};

} // namespace pvmmu::x86
