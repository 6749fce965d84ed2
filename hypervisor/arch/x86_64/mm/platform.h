// The Platform the core calls on bare metal (core/platform.h): TLB shootdown
// by LAPIC IPIs (cpu/shootdown.h), guest memory through the running vCPU's page
// tables with fault fixup, CR3 loads, and the hypervisor's L4 slots in every
// guest L4.
#pragma once

#include <new>

#include <pvmmu/abi.h>

#include "core/guest_va.h"
#include "core/platform.h"
#include "cpu/percpu.h"
#include "cpu/traps.h"
#include "mm/core_glue.h"

namespace pvmmu::x86 {

class BareMetal final : public Platform {
public:
    void flush_tlbs(CpuMask cpus, FlushRequest req) override;
    void relax() override;
    // Inline: the arch code's copies (a bounce frame, an iret frame) call
    // them directly (mm/core_glue.h bare_metal); the core's through Platform.
    int copy_from_guest(Vcpu& v, void* dst, Vaddr src, size_t n) override
    {
        if (!guest_range(v, src.v, n)) return n == 0 ? 0 : -XEN_EFAULT;
        return guest_copy_rc(dst, reinterpret_cast<const void*>(src.v), n);
    }
    int copy_to_guest(Vcpu& v, Vaddr dst, const void* src, size_t n) override
    {
        if (!guest_range(v, dst.v, n)) return n == 0 ? 0 : -XEN_EFAULT;
        return guest_copy_rc(reinterpret_cast<void*>(dst.v), src, n);
    }
    void load_base(Vcpu& v) override;
    uint64_t reserved_l4_entry(DomId owner, unsigned slot) const override;
    int set_ldt(Vcpu& v, Vaddr base, uint32_t ents) override;
    // The bare-metal hypercalls (pv/hypercall.cc's table).
    HcResult arch_hypercall(Vcpu& v, HypercallFrame& f) override;
    // tables_written: x86 page walkers are coherent with the data cache, so
    // the core's default (nothing to clean) is right here.

private:
    // Guest memory through the guest's own page tables: the vCPU asking is
    // the one running here, its L4 is loaded, and the hypervisor touches the
    // guest address directly. CR0.WP makes read-only guest pages (its page
    // tables) unwritable here too; a fault is fixed up (cpu/traps.cc) into
    // -EFAULT. Only the guest's part of the address space may be named:
    // never a reserved L4 slot, where the hypervisor itself is mapped.
    // The range in the guest's part (core/guest_va.h guest_range_ok; false
    // for n == 0, which the copies test only then, off their common path).
    static bool guest_range(const Vcpu& v, uint64_t va, size_t n)
    {
        return &v == this_vcpu() && guest_range_ok(va, n);
    }
};
static_assert(XEN_EFAULT == 14, "mm/guest_copy.S's guest_copy_rc returns -14");

// The one BareMetal, built in place at core_init (mm/core_glue.cc). Inline: a
// constant address, for the copies of every bounce and iret.
inline BareMetal& bare_metal() { return *std::launder(reinterpret_cast<BareMetal*>(g_platform_storage)); }

} // namespace pvmmu::x86
