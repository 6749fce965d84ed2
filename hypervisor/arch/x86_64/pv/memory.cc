// memory_op (docs/abi.md §10 "memory_op"): the sub-ops that only report, as
// Xen answers them to an unprivileged PV guest. pvmmu has no ballooning,
// grant or physmap sub-ops: everything else is -ENOSYS. Nothing here changes
// any state; the answer is written to the guest last.
#include <pvmmu/abi.h>
#include <xen/memory.h>

#include "core/memory_rules.h"
#include "mm/core_glue.h"
#include "mm/layout.h"
#include "pv/domain.h"
#include "pv/hypercall.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

namespace {

// Where Xen maps the M2P for a 64-bit PV guest, and the most it can hold.
// Xen tells a hardware domain max_mfn = max_page - 1 instead; pvmmu has
// none, and every domain gets the unprivileged answer.
constexpr xen_machphys_mapping_t kMachphys{MACH2PHYS_VIRT_START, MACH2PHYS_VIRT_END, MACH2PHYS_NR_ENTRIES - 1};
static_assert(MACH2PHYS_VIRT_START == HV_M2P_VIRT);

long machphys_mapping(Vcpu& v, uint64_t arg)
{
    return core()->platform().copy_to_guest(v, Vaddr{arg}, &kMachphys, sizeof(kMachphys));
}

// The domain a xen_memory_domain names, which only the caller's own may be
// (core/memory_rules.h).
long memory_domain(Vcpu& v, uint64_t arg)
{
    xen_memory_domain md;
    if (core()->platform().copy_from_guest(v, &md, Vaddr{arg}, sizeof(md))) return -XEN_EFAULT;
    return memory_domain_check(md.domid, v.domain->id, core()->domain(md.domid) != nullptr);
}

// A domain's frames are fixed at build: its current and maximum reservation
// are both the frames it was built with (its grant table's frames, which the
// domain owns too, are not counted, as Xen counts none of a table's frames in
// a domain's pages). Its highest gpfn is what the guest itself says in
// shared_info (core/memory_rules.h's maximum_gpfn).
long reservation(Vcpu& v, unsigned op, uint64_t arg)
{
    if (const long rc = memory_domain(v, arg)) return rc;
    if (op != XENMEM_maximum_gpfn) return long(guest_domain(v).layout.nr_frames);
    const shared_info_t* sh = guest_domain(v).shared;   // every domain that runs has one
    const uint64_t max_pfn = sh ? __atomic_load_n(&sh->arch.max_pfn, __ATOMIC_RELAXED) : 0;
    return maximum_gpfn(max_pfn);
}

} // namespace

long do_memory_op(Vcpu& v, HypercallFrame& f)
{
    const uint64_t cmd = f.arg[0], arg = f.arg[1];
    if (!arch_subop_known(__HYPERVISOR_memory_op, cmd)) return -XEN_ENOSYS;
    // The sub-ops answered take no extent (core/memory_rules.h).
    const uint64_t extent = cmd >> kMemopExtentShift;
    const unsigned op = unsigned(cmd & kMemopCmdMask);
    switch (op) {
    case XENMEM_machphys_mapping:
        return machphys_mapping(v, arg);
    case XENMEM_maximum_ram_page:
        // Xen's max_page: one past the highest machine frame of RAM.
        if (const long rc = memop_extent_check(extent)) return rc;
        return long(core()->mem().nr_frames);
    case XENMEM_current_reservation:
    case XENMEM_maximum_reservation:
    case XENMEM_maximum_gpfn:
        if (const long rc = memop_extent_check(extent)) return rc;
        return reservation(v, op, arg);
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
