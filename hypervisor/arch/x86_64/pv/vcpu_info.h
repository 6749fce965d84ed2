// Where a vCPU's vcpu_info lives (vcpu_info.cc).
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// The vcpu_info the hypervisor writes for v (its time, the virtual CR2):
// the registered one, else shared_info's slot (guest_shared_vcpu_info),
// else none (null). Inline: every bounce and iret asks.
vcpu_info* guest_shared_vcpu_info(Vcpu& v);
inline vcpu_info* guest_vcpu_info(Vcpu& v)
{
    if (vcpu_info* r = arch(v).info.load(std::memory_order_acquire)) return r;
    return guest_shared_vcpu_info(v);
}
// VCPUOP_register_vcpu_info of vCPU t for the caller.
long vcpu_info_register(Vcpu& caller, Vcpu& t, uint64_t arg);

} // namespace pvmmu::x86
