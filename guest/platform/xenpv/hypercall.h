// Hypercalls from a pvmmu guest kernel on bare metal: a call into the
// hypercall page the hypervisor filled (32 bytes per number), arguments in
// Xen's x86-64 PV registers RDI, RSI, RDX, R10, R8; the stub itself keeps
// RCX and R11, which SYSCALL clobbers; the result comes back in RAX.
#pragma once

#include <stdint.h>

extern "C" char hypercall_page[4096];

namespace pvmmu::xenpv {

inline long hypercall(unsigned op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0,
                      uint64_t a4 = 0)
{
    register uint64_t r10 asm("r10") = a3;
    register uint64_t r8 asm("r8") = a4;
    long ret;
    asm volatile("call *%[stub]"
                 : "=a"(ret), "+D"(a0), "+S"(a1), "+d"(a2), "+r"(r10), "+r"(r8)
                 : [stub] "r"(hypercall_page + op * 32)
                 : "rcx", "r11", "r9", "memory");
    return ret;
}

} // namespace pvmmu::xenpv
