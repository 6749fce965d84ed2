// The argument rules of VCPUOP_register_vcpu_info (<xen/vcpu.h>; docs/abi.md
// §10 "vcpu_info"), as Xen 4.17 checks them, in its order: the place, then
// whether the vCPU registered already, then the target vCPU (another one
// that is not down may not move); the frame's type comes last. Both middle
// checks answer -EINVAL, so the platform, which checks the target before
// taking the lock the "registered" check needs, answers as Xen. Only the
// decisions: the platform copies the argument, takes the frame and moves the
// record (arch pv/vcpu_info.cc).
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/types.h"

namespace pvmmu {

// The record at `offset` in its frame must end in the frame: else -ENXIO.
// pvmmu's rule takes any byte offset that fits, aligned or not; whether Xen
// 4.17 also refuses a misaligned one is not verified (docs/abi.md §11,
// "Not yet checked on Xen").
constexpr long vcpu_info_offset_check(uint64_t offset)
{
    return offset > kPageSize - sizeof(vcpu_info) ? -XEN_ENXIO : 0;
}

// Only the caller's own vCPU, or one that is not up (running or being
// initialised), may move: else -EINVAL.
constexpr long vcpu_info_target_check(bool is_caller, bool target_up)
{
    return !is_caller && target_up ? -XEN_EINVAL : 0;
}

// Once per vCPU: a second registration is -EINVAL.
constexpr long vcpu_info_once_check(bool registered) { return registered ? -XEN_EINVAL : 0; }

} // namespace pvmmu
