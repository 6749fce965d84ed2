// The arguments the batch hypercalls share: the foreign-domain argument and
// the vCPU bitmaps of flushes. The batch loop itself is core/batch.h.
#pragma once

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "core/platform.h"
#include "core/request_reader.h"

namespace pvmmu {

// The MapContext for mmu_update's foreigndom argument: DOMID_SELF or the caller's
// own id map only its frames; another domain or DOMID_IO needs the MapForeign
// privilege (-EPERM), and must exist (-ESRCH).
[[nodiscard]] inline int resolve_foreign(Hypervisor& hv, const Domain& d, uint64_t fd_arg,
                                         MapContext& ctx)
{
    const DomId fd = DomId(fd_arg & 0xffff);
    ctx = MapContext{d.id, d.id};
    if (fd == DOMID_SELF || fd == d.id) return 0;
    if (!d.policy.allows(Perm::MapForeign)) return -XEN_EPERM;
    if (fd != DOMID_IO && !hv.domain(fd)) return -XEN_ESRCH;
    ctx.foreign = fd == DOMID_IO ? kOwnerIo : fd;
    return 0;
}

// Reads a guest vCPU bitmap (one xen_ulong_t: pvmmu has at most 64 vCPUs) and
// turns it into physical CPUs. Bits naming absent vCPUs are -EINVAL.
[[nodiscard]] inline int read_vcpumask(Hypervisor& hv, Vcpu& v, Vaddr mask_va, CpuMask& out)
{
    uint64_t bits = 0;
    if (hv.platform().copy_from_guest(v, &bits, mask_va, sizeof(bits))) return -XEN_EFAULT;
    const Domain& d = *v.domain;
    if (bits & ~d.vcpu_bits_valid()) return -XEN_EINVAL;
    out = d.cpus_of(bits);
    return 0;
}

} // namespace pvmmu
