// physdev_op (<xen/physdev.h>): the virtual IOPL that port I/O from the
// kernel is checked against (port_io.cc).
#include <pvmmu/abi.h>
#include <xen/physdev.h>

#include "core/port_io_rules.h"
#include "mm/core_glue.h"
#include "pv/hypercall.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

// physdev_op(cmd, arg): PHYSDEVOP_set_iopl with Xen's checks (-EFAULT for
// the argument, then set_iopl_check); pvmmu has no physical devices to offer,
// so every other sub-op is -ENOSYS.
long do_physdev_op(Vcpu& v, HypercallFrame& f)
{
    if (!arch_subop_known(__HYPERVISOR_physdev_op, uint32_t(f.arg[0]))) return -XEN_ENOSYS;   // an int cmd
    physdev_set_iopl s;
    if (core()->platform().copy_from_guest(v, &s, Vaddr{f.arg[1]}, sizeof(s))) return -XEN_EFAULT;
    if (long rc = set_iopl_check(s.iopl)) return rc;
    arch(v).iopl = uint8_t(s.iopl);
    return 0;
}

} // namespace pvmmu::x86
