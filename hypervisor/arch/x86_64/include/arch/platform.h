// The Platform the core calls on bare metal (core/platform.h). TLB shootdown
// is real (LAPIC IPIs, shootdown.h). Guest memory access and address-space
// switches come with guest entry (issue 6, later): until a vCPU can run,
// nothing can ask for them, and they refuse loudly rather than guess.
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
    // tables_written: x86 page walkers are coherent with the data cache, so
    // the core's default (nothing to clean) is right here.
};

} // namespace pvmmu::x86
