// The CPU leaves of the CPUID a PV kernel gets through Xen's forced-emulation
// prefix (pv/emulate.cc), as Xen 4.17's default PV policy shows them
// (docs/abi.md §12.2): an allow-list per feature word, generated at build
// time from the 'A' marks of <xen/arch-x86/cpufeatureset.h>
// (gen/pv_featuremask.py), the AMD copies of leaf 1's EDX in 0x80000001
// folded, and the leaves Xen empties emptied. A pure function of the raw
// leaves, so the host's unit tests feed it any CPU (tests/arch/guest_cpuid_test.cc).
#pragma once

#include <stdint.h>

#include "arch/pv_featuremask.h"
#include "cpu/x86.h"

namespace pvmmu::x86 {

// The processor's CPUID (leaf, subleaf).
using RawCpuid = CpuidRegs (*)(uint32_t leaf, uint32_t sub);

// Leaf 0x80000001 EDX bits that mirror leaf 1 EDX on AMD (FPU to PSE36 but
// SEP's bit 11, which is SYSCALL there, MMX, FXSR: AMD APM vol. 3, CPUID
// Fn8000_0001_EDX); Xen copies them from the masked leaf 1 on AMD and
// clears them elsewhere.
inline constexpr uint32_t kAmdLeaf1Copies = 0x000003ffu | 0x0003f000u | (1u << 23) | (1u << 24);

// What a PV kernel's forced-emulation CPUID (leaf, sub) answers for a leaf
// below 0x40000000 or from 0x80000000 (Xen's own leaves are pv/emulate.cc's).
CpuidRegs pv_cpuid(uint32_t leaf, uint32_t sub, RawCpuid raw);

// The allow-list of feature word `word` (cpufeatureset.h's numbering), 0
// for a word the table does not hold.
uint32_t pv_allowed(unsigned word);

} // namespace pvmmu::x86
