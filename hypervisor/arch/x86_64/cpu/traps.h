// Traps: the register frame cpu/trap_entry.S (and pv/syscall_entry.S) builds, the
// vectors the platform uses, and the C++ side of the entry (cpu/traps.cc). An
// exception in ring 0 is the hypervisor's own bug — reported (vector, error
// code, RIP, CR2, the CPU), the run ends — except a fault of guest_copy or
// of load_gs_user_sel's segment load, which is fixed up; one from ring 3 is
// first given to what Xen emulates for a PV kernel (pv/emulate.cc), else
// bounced to the guest's trap table (pv/traps.cc) or crashes its domain.
#pragma once

#include <atomic>

#include <stddef.h>
#include <stdint.h>

#include "core/hypercall_frame.h"
#include "cpu/entry_defs.h"
#include "cpu/exceptions.h"

namespace pvmmu::x86 {

struct TrapFrame {
    uint64_t r15, r14, r13, r12, r11, rbp, rcx, rbx;
    // RAX, then Xen's hypercall arguments in their order (docs/abi.md
    // "Hypercalls": RDI, RSI, RDX, R10, R8, R9), so that a hypercall's
    // number and arguments are a HypercallFrame in place (pv/hypercall.cc
    // syscall_dispatch): a call's handler reads them there, and a
    // continuation's rewritten arguments (only a preempted call writes
    // them) are the guest's registers for its SYSCALL again.
    union {
        struct {
            uint64_t rax, rdi, rsi, rdx, r10, r8, r9;
        };
        HypercallFrame hc;
    };
    uint64_t vector, error;
    uint64_t rip, cs, rflags, rsp, ss;   // pushed by the CPU
};
static_assert(sizeof(TrapFrame) == TRAP_FRAME_SIZE);
static_assert(offsetof(TrapFrame, hc) == offsetof(TrapFrame, rax) && sizeof(HypercallFrame) == 7 * sizeof(uint64_t));
static_assert(offsetof(TrapFrame, hc.arg[0]) == offsetof(TrapFrame, rdi) &&
              offsetof(TrapFrame, hc.arg[1]) == offsetof(TrapFrame, rsi) &&
              offsetof(TrapFrame, hc.arg[2]) == offsetof(TrapFrame, rdx) &&
              offsetof(TrapFrame, hc.arg[3]) == offsetof(TrapFrame, r10) &&
              offsetof(TrapFrame, hc.arg[4]) == offsetof(TrapFrame, r8) &&
              offsetof(TrapFrame, hc.arg[5]) == offsetof(TrapFrame, r9));
static_assert(sizeof(TrapFrame) % 16 == 0);   // keeps the call aligned (cpu/trap_entry.S)

// The frame's word of each general register, RAX..R15 in x86 encoding order
// (ModRM, SIB and REX numbering; RSP's is the one the CPU pushed): read in
// place by the PTE-write decoder (pv/ptwr.cc, pv/decode.h GprView). Each
// register is a whole, aligned word of the frame.
inline constexpr size_t kTrapFrameGprOffset[16] = {
    offsetof(TrapFrame, rax), offsetof(TrapFrame, rcx), offsetof(TrapFrame, rdx), offsetof(TrapFrame, rbx),
    offsetof(TrapFrame, rsp), offsetof(TrapFrame, rbp), offsetof(TrapFrame, rsi), offsetof(TrapFrame, rdi),
    offsetof(TrapFrame, r8),  offsetof(TrapFrame, r9),  offsetof(TrapFrame, r10), offsetof(TrapFrame, r11),
    offsetof(TrapFrame, r12), offsetof(TrapFrame, r13), offsetof(TrapFrame, r14), offsetof(TrapFrame, r15)};
consteval bool trap_frame_gprs_are_words()
{
    for (const size_t o : kTrapFrameGprOffset)
        if (o % sizeof(uint64_t) != 0 || o + sizeof(uint64_t) > sizeof(TrapFrame)) return false;
    return true;
}
static_assert(trap_frame_gprs_are_words(), "each register must be an aligned word of the TrapFrame");
struct TrapFrameGprMap {
    uint8_t word[16];   // word[i]: register i's index among the frame's uint64_t words
};
consteval TrapFrameGprMap trap_frame_gpr_map()
{
    TrapFrameGprMap m{};
    for (unsigned i = 0; i < 16; ++i) m.word[i] = uint8_t(kTrapFrameGprOffset[i] / sizeof(uint64_t));
    return m;
}
inline constexpr TrapFrameGprMap kTrapFrameGpr = trap_frame_gpr_map();

inline constexpr uint8_t kVectorShootdown = 0xf0;
// Wakes an idle CPU to run a vCPU (VCPUOP_up), a halted one whose vCPU an
// event woke, and makes a running vCPU take its upcall (pv/events.h).
inline constexpr uint8_t kVectorKick = 0xf1;
inline constexpr uint8_t kVectorTimer = 0xf2;   // the local APIC timer (cpu/lapic.h)
inline constexpr uint8_t kVectorSpurious = 0xff;

// The entry stubs of cpu/trap_entry.S, in IDT order: exceptions 0-31, then
// kVectorShootdown, kVectorKick, kVectorTimer and kVectorSpurious.
inline constexpr unsigned kNrPlatformVectors = 4;
extern "C" const uint64_t trap_stubs[kNrExceptions + kNrPlatformVectors];

const char* exception_name(uint64_t vector);

// cpu/trap_entry.S: the IRETQ that returns to every TrapFrame.
extern "C" const char trap_return_iretq[];
// pv/syscall_entry.S: where SYSCALL lands (IA32_LSTAR).
extern "C" [[gnu::visibility("hidden")]] void syscall_entry();
// ... and from compatibility mode (IA32_CSTAR): VECTOR_SYSCALL32.
extern "C" [[gnu::visibility("hidden")]] void syscall32_entry();

// The fault-fixup table (cpu/extable.h; hv.ld.S gathers it): guest_copy's
// (and guest_probe_read's) instructions that touch guest memory, and
// load_gs_user_sel's load of a guest's selector, each followed by its fixup,
// up to hv_extable_end.
extern "C" const uint64_t hv_extable[], hv_extable_end[];
// mm/guest_copy.S: copies n bytes to or from guest memory; the count NOT copied.
extern "C" size_t guest_copy(void* dst, const void* src, size_t n);
// The same copy, returning 0 when all n bytes were copied and -XEN_EFAULT when not.
extern "C" int guest_copy_rc(void* dst, const void* src, size_t n);
// The 16 bytes at src, two words: 0, or -XEN_EFAULT when they cannot all be read.
extern "C" int guest_read16(void* dst, const void* src);
// Loads sel into %gs, or null where the CPU refuses it, with the PerCpu
// parked in IA32_KERNEL_GS_BASE meanwhile; the base the descriptor gave, 0
// for null (pv/segment_base.S; SEGBASE_GS_USER_SEL, pv/segment_base.cc). IF
// must be clear. load_gs_user_sel_load: its load, the one instruction
// whose fault resumes from an entry that found the PerCpu parked (cpu/traps.cc).
extern "C" uint64_t load_gs_user_sel(uint16_t sel);
extern "C" const char load_gs_user_sel_load[];
// mm/guest_copy.S: reads a byte of guest memory with the SMAP window open or
// not; 0 if it read, 1 if it faulted (the self-test of cpu/cpu_features.h).
extern "C" int guest_probe_read(const void* va, bool open);

// Called from cpu/trap_entry.S: trap_dispatch for every vector and for
// SYSCALL from compatibility mode (VECTOR_SYSCALL32); syscall_trap for
// SYSCALL from 64-bit mode (VECTOR_SYSCALL, from pv/syscall_entry.S): from
// the guest's kernel mode a hypercall, which goes to syscall_dispatch
// (pv/hypercall.cc syscall_trap) with interrupts on; from its user mode the guest's
// system call (pv/traps.cc).
extern "C" void trap_dispatch(TrapFrame* f);
extern "C" void syscall_trap(TrapFrame* f);

} // namespace pvmmu::x86
