// Guest user mode, as x86-64 PV defines it (docs/architecture.md "Guest user
// mode"; <xen/arch-x86/xen-x86_64.h>): the guest's kernel and its user
// processes both run in ring 3, told apart by a per-vCPU mode flag. Each
// mode has its own L4 (MMUEXT_NEW_BASEPTR, MMUEXT_NEW_USER_BASEPTR) and its
// own %gs base (SEGBASE_GS_KERNEL, SEGBASE_GS_USER); the switch loads the
// other L4 into CR3 and swaps the %gs bases, as Xen's toggle_guest_mode.
#pragma once

#include "pv/domain.h"

namespace pvmmu::x86 {

// The running vCPU v leaves its kernel mode for its user mode: the user L4
// into CR3 (it must have one: MMUEXT_NEW_USER_BASEPTR), the kernel's %gs
// base kept and the user's made the live one. And back. Only on the CPU
// v runs on; interrupts may be on or off.
// Inline tests of the mode, each switch out of line.
void guest_switch_to_user_mode(Vcpu& v);
void guest_switch_to_kernel_mode(Vcpu& v);

inline bool guest_in_user_mode(const Vcpu& v)
{
    return static_cast<const VcpuArch*>(v.platform_data)->user_mode;
}

inline void guest_enter_user_mode(Vcpu& v)
{
    if (!guest_in_user_mode(v)) guest_switch_to_user_mode(v);
}

inline void guest_enter_kernel_mode(Vcpu& v)
{
    if (guest_in_user_mode(v)) guest_switch_to_kernel_mode(v);
}

} // namespace pvmmu::x86
