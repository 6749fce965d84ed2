// The privileged instructions the platform uses, one inline function each, so
// inline assembly appears in one place and the rest of the arch code is C++.
#pragma once

#include <stdint.h>

#include "cpu/cpu_bits.h"

namespace pvmmu::x86 {

inline uint8_t inb(uint16_t port)
{
    uint8_t v;
    asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
inline void outb(uint16_t port, uint8_t v) { asm volatile("outb %0, %1" : : "a"(v), "Nd"(port)); }
inline uint16_t inw(uint16_t port)
{
    uint16_t v;
    asm volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
inline void outw(uint16_t port, uint16_t v) { asm volatile("outw %0, %1" : : "a"(v), "Nd"(port)); }
inline void outl(uint16_t port, uint32_t v) { asm volatile("outl %0, %1" : : "a"(v), "Nd"(port)); }

inline uint64_t rdmsr(uint32_t msr)
{
    uint32_t lo, hi;
    asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return (uint64_t(hi) << 32) | lo;
}
inline void wrmsr(uint32_t msr, uint64_t v)
{
    asm volatile("wrmsr" : : "c"(msr), "a"(uint32_t(v)), "d"(uint32_t(v >> 32)) : "memory");
}

// The time-stamp counter (RDTSC: EDX:EAX).
inline uint64_t rdtsc()
{
    uint32_t lo, hi;
    asm volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t(hi) << 32) | lo;
}

struct CpuidRegs {
    uint32_t eax, ebx, ecx, edx;
};
inline CpuidRegs cpuid(uint32_t leaf, uint32_t sub = 0)
{
    CpuidRegs r;
    asm volatile("cpuid" : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx) : "a"(leaf), "c"(sub));
    return r;
}

inline uint64_t read_cr0()
{
    uint64_t v;
    asm volatile("mov %%cr0, %0" : "=r"(v));
    return v;
}
inline uint64_t read_cr2()
{
    uint64_t v;
    asm volatile("mov %%cr2, %0" : "=r"(v));
    return v;
}
inline void write_cr2(uint64_t v) { asm volatile("mov %0, %%cr2" : : "r"(v)); }
inline uint64_t read_cr3()
{
    uint64_t v;
    asm volatile("mov %%cr3, %0" : "=r"(v));
    return v;
}
inline uint64_t read_cr4()
{
    uint64_t v;
    asm volatile("mov %%cr4, %0" : "=r"(v));
    return v;
}
// A CR3 write flushes every non-global translation of this CPU ("Invalidation
// of TLBs and Paging-Structure Caches").
inline void write_cr3(uint64_t v) { asm volatile("mov %0, %%cr3" : : "r"(v) : "memory"); }
inline void write_cr4(uint64_t v) { asm volatile("mov %0, %%cr4" : : "r"(v) : "memory"); }
inline void write_cr0(uint64_t v) { asm volatile("mov %0, %%cr0" : : "r"(v) : "memory"); }
inline void clts() { asm volatile("clts" ::: "memory"); }
inline void invlpg(uint64_t va) { asm volatile("invlpg (%0)" : : "r"(va) : "memory"); }

inline void pause() { asm volatile("pause" ::: "memory"); }
inline void cli() { asm volatile("cli" ::: "memory"); }
inline void sti() { asm volatile("sti" ::: "memory"); }
// sti takes effect after the next instruction, so no interrupt slips in
// between the two and the hlt cannot miss a wake-up.
inline void sti_hlt() { asm volatile("sti; hlt" ::: "memory"); }

[[noreturn]] inline void halt_forever()
{
    for (;;) asm volatile("cli; hlt" ::: "memory");
}

} // namespace pvmmu::x86
