// The instructions Xen emulates for a PV kernel in ring 3 (emulate.cc).
#pragma once

#include "cpu/cpu_bits.h"
#include "cpu/selectors.h"
#include "cpu/traps.h"
#include "pv/debugreg.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// What Xen emulates for a PV kernel when the CPU refuses it in ring 3
// (pv/emulate.cc): for a #GP, an INT n the trap table's DPL allows and the
// privileged instructions Xen emulates; for a #UD, Xen's forced-emulation
// prefix; for a #NM, the virtual CR0.TS (a #PF has its own way,
// guest_emulate_page_fault). True when f is ready to return to
// the guest (the instruction done, or another event delivered); false when
// the exception goes to the guest's handler as it is.
bool guest_emulate(TrapFrame& f);

// A #PF's emulation: Xen's "writable page tables" (pv/ptwr.cc, docs/abi.md
// §12.5), a write of the guest kernel's to one of its own L1 tables; for
// trap_dispatch's own way for page faults (cpu/traps.cc). Only for a #PF of
// the guest's kernel mode, which trap_dispatch tests first
// (guest_in_user_mode): a PV kernel's tables are written by its kernel
// only, as Xen emulates them. False when it is not emulated:
// the #PF goes to the guest as the CPU raised it, CR2 included.
bool guest_emulate_page_fault(TrapFrame& f);

// Whether the guest ran 64-bit code (CS.L, "Segment Descriptors"; LAR puts
// the descriptor's bits 23:8 of its upper word in its result, L at bit 21).
// The decoders know 64-bit code only (a 40-4F byte is a REX prefix there,
// INC or DEC in compatibility mode, where CS's base counts too), so from a
// guest's 32-bit code segment nothing is emulated: its #GP, #UD or #PF goes
// to the guest's handler as the CPU raised it (Xen emulates there too; a
// difference, docs/abi.md §11).
inline bool long_mode_cs(uint64_t cs)
{
    if (cs == HV_SEL_GUEST_CS64) return true;
    uint32_t ar = 0;
    bool valid = false;
    asm("lar %2, %0" : "=r"(ar), "=@ccz"(valid) : "rm"(uint32_t(uint16_t(cs))));
    return valid && ((ar >> 21) & 1);
}

// An emulated instruction of `len` bytes done: RIP past it, and what the CPU
// does at the end of an instruction that completes. RF ends, as the CPU
// clears it: an instruction breakpoint on the next one fires. The
// single-step trap the instruction would have taken, as the CPU delivers it
// after an instruction that completes, and the I/O breakpoints it met
// (`hits`); with neither, guest_debug_after_emulation would do nothing, so
// the common case makes no call.
inline void completed(TrapFrame& f, unsigned len, uint32_t hits)
{
    f.rip += len;
    f.rflags &= ~uint64_t(RFLAGS_RF);
    if (hits || (f.rflags & RFLAGS_TF)) guest_debug_after_emulation(f, hits);
}

// Up to n bytes at rip, as many as the guest's tables let be read (the
// instruction may end on a page that is gone); the count read
// (pv/emulate.cc).
unsigned guest_fetch(Vcpu& v, uint64_t rip, uint8_t* b, unsigned n);

} // namespace pvmmu::x86
