// What the small test guests that take events share (events_guest,
// grant_guest): the pvclock read and the event callback's entry stubs.
#pragma once

#include <stdint.h>

#include "tiny_guest.h"   // <pvmmu/abi.h> before Xen's headers

namespace tiny {

// The pvclock (vcpu_time_info, <xen/xen.h>): system time in ns, read under
// the version protocol (an odd or changed version: read again).
inline uint64_t pvclock_ns(volatile vcpu_time_info_t& t)
{
    for (;;) {
        const uint32_t v = t.version;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        uint64_t delta = __builtin_ia32_rdtsc() - t.tsc_timestamp;
        const uint64_t base = t.system_time;
        const uint32_t mul = t.tsc_to_system_mul;
        const int8_t shift = t.tsc_shift;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        if ((v & 1) || t.version != v) continue;
        delta = shift >= 0 ? delta << shift : delta >> -shift;
        return base + uint64_t((unsigned __int128)delta * mul >> 32);
    }
}

} // namespace tiny

// The event callback `entries`, one 16-byte entry per vCPU (0-3): Xen's
// bounce frame at RSP (RCX, R11, RIP, CS, RFLAGS, RSP, SS), upcalls masked.
// Each saves the registers a C call may clobber, calls `handler(vcpu)`, and
// returns through the iret hypercall, which restores the mask from
// RFLAGS.IF. At namespace scope, once per guest.
#define TINY_EVENT_CALLBACKS(entries, handler)                                                                     \
    extern "C" __attribute__((visibility("hidden"))) char entries[];                                               \
    extern "C" __attribute__((visibility("hidden"))) void handler(unsigned vcpu);                                  \
    asm(".pushsection .text\n .globl " #entries "\n .hidden " #entries "\n .balign 16\n" #entries ":\n"            \
        " .irp n, 0, 1, 2, 3\n .balign 16\n pushq $\\n\n jmp 1f\n .endr\n"                                         \
        "1: pushq %rax\n pushq %rdx\n pushq %rsi\n pushq %rdi\n pushq %r8\n pushq %r9\n pushq %r10\n pushq %rbx\n" \
        " mov 64(%rsp), %rdi\n mov %rsp, %rbx\n and $-16, %rsp\n cld\n call " #handler "\n mov %rbx, %rsp\n"      \
        " popq %rbx\n popq %r10\n popq %r9\n popq %r8\n popq %rdi\n popq %rsi\n popq %rdx\n popq %rax\n"           \
        " add $8, %rsp\n popq %rcx\n popq %r11\n pushq $0\n jmp hypercall_page + 23 * 32\n .popsection\n")
