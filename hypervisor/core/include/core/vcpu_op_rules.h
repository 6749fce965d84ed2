// The argument rules of vcpu_op (<xen/vcpu.h>; docs/abi.md §10 "vcpu_op"),
// as Xen 4.17 answers them, and pvmmu's differences that docs/abi.md §11
// lists: which vCPU a call may name, which state changes VCPUOP_initialise,
// VCPUOP_up, VCPUOP_down and VCPUOP_is_up make, and which values of a
// vcpu_guest_context VCPUOP_initialise refuses. Only the decisions: the
// platform copies the context, takes the L4s, loads the registers and
// starts or idles the CPU (arch pv/vcpu_op.cc). The timer sub-ops are
// core/event_ops.h's, VCPUOP_register_vcpu_info's rules
// core/vcpu_info_rules.h's.
#pragma once

#include <stdint.h>

#include <pvmmu/abi.h>

#include "core/callback_rules.h"
#include "core/guest_va.h"
#include "core/types.h"

namespace pvmmu {

// The vCPU id comes first, before the sub-op: one the domain does not have
// is -ENOENT (Xen's do_vcpu_op looks the vCPU up before the command).
constexpr long vcpu_op_target_check(uint32_t id, uint32_t nr_vcpus) { return id >= nr_vcpus ? -XEN_ENOENT : 0; }

// A vCPU's life (the platform keeps it per vCPU and moves it by
// compare-exchange, so several vCPUs' calls on one target are serialised):
// Down until a VCPUOP_initialise makes it Initialised; Busy while one runs;
// Up from VCPUOP_up until its own VCPUOP_down, which makes it Down again.
enum class VcpuState : uint8_t { Down, Initialised, Busy, Up };

// VCPUOP_initialise of a vCPU in state `s`: an up one is -EEXIST, as on Xen;
// one another initialise is changing -EBUSY; a down or initialised one is
// (re)initialised. Its state afterwards: vcpu_initialised_state.
constexpr long vcpu_initialise_check(VcpuState s)
{
    return s == VcpuState::Up ? -XEN_EEXIST : s == VcpuState::Busy ? -XEN_EBUSY : 0;
}

// After the initialise: Initialised, or Down when it failed (a failure may
// have taken part of the trap table, which no VCPUOP_up may run).
constexpr VcpuState vcpu_initialised_state(long rc) { return rc ? VcpuState::Down : VcpuState::Initialised; }

// VCPUOP_up of a vCPU in state `s`: an initialised one starts (and becomes
// Up), one that is up already is 0 with nothing done, as on Xen; one never
// initialised, after a failed initialise or while one runs is -EINVAL.
constexpr bool vcpu_up_starts(VcpuState s) { return s == VcpuState::Initialised; }
constexpr long vcpu_up_check(VcpuState s) { return s == VcpuState::Initialised || s == VcpuState::Up ? 0 : -XEN_EINVAL; }

// VCPUOP_down: only the calling vCPU (pvmmu's difference: Xen downs any
// vCPU of the domain and keeps its state), else -EINVAL.
constexpr long vcpu_down_check(bool is_caller) { return is_caller ? 0 : -XEN_EINVAL; }

// VCPUOP_is_up: 1 or 0.
constexpr long vcpu_is_up(VcpuState s) { return s == VcpuState::Up ? 1 : 0; }

// The words of a vcpu_guest_context that VCPUOP_initialise checks before it
// reads the GDT frames (the rest is taken as it is, docs/abi.md §12.3).
struct VcpuContextArgs {
    uint64_t rip = 0, rsp = 0;              // user_regs
    uint64_t base[3] = {};                  // fs_base, gs_base_kernel, gs_base_user
    uint64_t event = 0, failsafe = 0, syscall = 0;   // the callbacks' addresses
    uint64_t kernel_ss = 0, kernel_sp = 0;
    uint64_t cr1 = 0, cr3 = 0;              // ctrlreg[1] (the user L4; 0: none), ctrlreg[3]
    uint64_t flags = 0;                     // VGCF_*
};

// kernel_ss = kernel_sp = 0: no kernel stack, what a new vCPU has.
constexpr bool vcpu_context_no_stack(const VcpuContextArgs& c) { return c.kernel_ss == 0 && c.kernel_sp == 0; }

// The context's checks, each the one the hypercall that sets the value
// applies, all -EINVAL (docs/abi.md §10): RIP, RSP and the segment bases
// must be guest addresses (set_segment_base), so must the three callbacks
// (set_callbacks) and a kernel stack (stack_switch; kernel_ss = kernel_sp = 0
// is taken as none, what a new vCPU has, which stack_switch would refuse);
// CR3 must be page-aligned and name a frame `frame_ok` takes, so must a
// non-zero ctrlreg[1] (as MMUEXT_NEW_BASEPTR and NEW_USER_BASEPTR; their
// type is checked when the vCPU references them); a vCPU that starts in
// user mode (no VGCF_in_kernel) needs a user L4, as on Xen.
template <class FrameOk>
constexpr long vcpu_context_check(const VcpuContextArgs& c, FrameOk&& frame_ok)
{
    if (!guest_va_ok(c.rip) || !guest_va_ok(c.rsp)) return -XEN_EINVAL;
    for (uint64_t b : c.base)
        if (!guest_va_ok(b)) return -XEN_EINVAL;
    if (!callbacks_ok(c.event, c.failsafe, c.syscall)) return -XEN_EINVAL;
    if (!vcpu_context_no_stack(c) && !kernel_stack_ok(c.kernel_sp)) return -XEN_EINVAL;
    if ((c.cr3 & (kPageSize - 1)) || !frame_ok(Mfn{xen_cr3_to_pfn(c.cr3)})) return -XEN_EINVAL;
    const bool has_user = c.cr1 != 0;
    if (has_user && ((c.cr1 & (kPageSize - 1)) || !frame_ok(Mfn{xen_cr3_to_pfn(c.cr1)}))) return -XEN_EINVAL;
    if (!(c.flags & VGCF_in_kernel) && !has_user) return -XEN_EINVAL;
    return 0;
}

// The context's gdt_ents: at most the entries below Xen's reserved ones,
// as set_gdt (descriptor_rules.h), checked on all 64 bits of the field.
constexpr long vcpu_context_gdt_check(uint64_t gdt_ents) { return gdt_ents > FIRST_RESERVED_GDT_ENTRY ? -XEN_EINVAL : 0; }

} // namespace pvmmu
