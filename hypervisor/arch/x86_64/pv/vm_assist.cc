// vm_assist (<xen/xen.h> VMASST_*): the answer is the core's
// (core/vm_assist_rules.h); what a domain enabled is recorded in its
// GuestDomain.
#include <atomic>

#include <pvmmu/abi.h>

#include "core/vm_assist_rules.h"
#include "pv/hypercall.h"

namespace pvmmu::x86 {

long do_vm_assist(Vcpu& v, HypercallFrame& f)
{
    const uint32_t cmd = uint32_t(f.arg[0]), type = uint32_t(f.arg[1]);
    const long rc = vm_assist_result(cmd, type);
    if (rc) return rc;
    std::atomic<uint64_t>& bits = guest_domain(v).vm_assist;
    if (cmd == VMASST_CMD_enable) bits.fetch_or(1ull << type, std::memory_order_relaxed);
    else bits.fetch_and(~(1ull << type), std::memory_order_relaxed);
    return 0;
}

} // namespace pvmmu::x86
