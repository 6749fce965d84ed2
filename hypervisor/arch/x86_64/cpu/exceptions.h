// The x86 exceptions by name: their vectors, which of them push an error
// code, and the bits of a page fault's error code (SDM Vol. 3A, "Exception
// and Interrupt Reference" and "Page-Fault Exceptions"). The same numbers
// are a PV guest's: trap_info_t.vector of set_trap_table
// (<xen/arch-x86/xen.h>) is the IDT vector, so the hypervisor's IDT, the
// guest's virtual IDT and the emulation paths all use these names.
// cpu/trap_entry.S lists the 32 stubs in vector order, each with whether the
// CPU pushes an error code: exception_has_error_code below.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

// The architectural exceptions are vectors 0-31; interrupts come above.
inline constexpr unsigned kNrExceptions = 32;

inline constexpr uint8_t kExcDE = 0;    // divide error
inline constexpr uint8_t kExcDB = 1;    // debug (also INT1, ICEBP)
inline constexpr uint8_t kExcNMI = 2;   // non-maskable interrupt
inline constexpr uint8_t kExcBP = 3;    // breakpoint (INT3)
inline constexpr uint8_t kExcOF = 4;    // overflow (INTO)
inline constexpr uint8_t kExcBR = 5;    // BOUND range exceeded
inline constexpr uint8_t kExcUD = 6;    // invalid opcode
inline constexpr uint8_t kExcNM = 7;    // device not available (CR0.TS)
inline constexpr uint8_t kExcDF = 8;    // double fault
inline constexpr uint8_t kExcTS = 10;   // invalid TSS
inline constexpr uint8_t kExcNP = 11;   // segment not present
inline constexpr uint8_t kExcSS = 12;   // stack-segment fault
inline constexpr uint8_t kExcGP = 13;   // general protection
inline constexpr uint8_t kExcPF = 14;   // page fault
inline constexpr uint8_t kExcMF = 16;   // x87 floating-point error
inline constexpr uint8_t kExcAC = 17;   // alignment check
inline constexpr uint8_t kExcMC = 18;   // machine check
inline constexpr uint8_t kExcXM = 19;   // SIMD floating-point
inline constexpr uint8_t kExcVE = 20;   // virtualization exception
inline constexpr uint8_t kExcCP = 21;   // control protection
inline constexpr uint8_t kExcHV = 28;   // hypervisor injection (AMD)
inline constexpr uint8_t kExcVC = 29;   // VMM communication (AMD SEV-ES)
inline constexpr uint8_t kExcSX = 30;   // security exception (AMD)

// Whether the CPU pushes an error code for exception `v` (each vector's
// "Exception Error Code" in the reference; AMD's #VC and #SX too).
constexpr bool exception_has_error_code(unsigned v)
{
    return v == kExcDF || (v >= kExcTS && v <= kExcPF) || v == kExcAC || v == kExcCP || v == kExcVC ||
           v == kExcSX;
}
static_assert([] {
    unsigned n = 0;
    for (unsigned v = 0; v < kNrExceptions; ++v) n += exception_has_error_code(v);
    return n == 10;   // 8, 10-14, 17, 21, 29, 30: the stubs of cpu/trap_entry.S marked 1
}());
static_assert(!exception_has_error_code(kExcDB) && !exception_has_error_code(kExcUD) &&
              !exception_has_error_code(kExcMC) && exception_has_error_code(kExcPF));

// A page fault's error code ("Page-Fault Exceptions", the error code's bits).
inline constexpr uint64_t kPfPresent = 1u << 0;   // P: 1 a protection violation, 0 a page not present
inline constexpr uint64_t kPfWrite = 1u << 1;     // W/R: a write
inline constexpr uint64_t kPfUser = 1u << 2;      // U/S: from CPL 3
inline constexpr uint64_t kPfRsvd = 1u << 3;      // RSVD: a reserved bit set in an entry
inline constexpr uint64_t kPfInstr = 1u << 4;     // I/D: an instruction fetch
static_assert((kPfPresent | kPfWrite | kPfUser | kPfRsvd | kPfInstr) == 0x1f);   // bits 0-4, none shared

} // namespace pvmmu::x86
