// The hardware-independent half of pv/emulate.cc (docs/abi.md §10
// "Emulation"): what the bytes at a refused instruction's RIP ask for. Pure
// functions of their arguments, so the host's unit
// tests feed them every short, prefixed and mismatched input
// (tests/arch/guest_decode_test.cc).
#pragma once

#include <stdint.h>

#include "cpu/cpu_bits.h"

namespace pvmmu::x86 {

// The instructions emulated for a #GP(0): 0F xx after one optional REX
// prefix; port I/O (IN, OUT, INS, OUTS) after an optional operand-size
// (66) and REP (F3) prefix and one REX; CLI and STI.
enum class PrivOp : uint8_t {
    None, Clts, Wbinvd, ReadCr, WriteCr, ReadDr, WriteDr, Rdmsr, Wrmsr, In, Out, Ins, Outs, Cli, Sti
};

struct PrivInsn {
    PrivOp op = PrivOp::None;
    uint8_t cr = 0;    // Read/WriteCr, Read/WriteDr: the control or debug register (REX.R extends it)
    uint8_t reg = 0;   // Read/WriteCr, Read/WriteDr: the general register, ModRM numbering (REX.B extends it)
    uint8_t len = 0;   // the instruction's length
    uint8_t size = 0;  // port I/O: the bytes per access, 1, 2 or 4
    bool rep = false;  // INS / OUTS with REP: RCX times
    int16_t port = -1; // IN / OUT: the immediate port, -1 when it is %dx
};

// b: the n bytes at RIP that could be read (n may be short: the next page
// may be gone).
PrivInsn decode_privileged(const uint8_t* b, unsigned n);

// Whether the hypervisor emulates a decoded instruction (rdmsr, wrmsr: of
// MSR `msr`, the guest's ECX), before the checks of its value (CR0's other
// bits, the hypercall page's frame). The rest keeps its #GP(0). The
// emulator asks it first, and docs/abi.md §12's instruction table is
// checked against it (tests/abi/abi_table_test.cc).
bool emulated(const PrivInsn& in, uint32_t msr);

// Xen's forced-emulation prefix and CPUID: 0f 0b 'x' 'e' 'n' 0f a2.
inline constexpr unsigned kForcedCpuidLen = 7;
bool is_forced_cpuid(const uint8_t* b, unsigned n);

// The vector of the INT n (CD ib) at RIP whose gate the #GP's error code
// names (IDT bit set, EXT clear; index n * 8 + 2 on a CPU, n * 16 + 2 under
// QEMU's TCG), or -1.
int software_int_vector(const uint8_t* b, unsigned n, uint64_t error);

// Writes to a page-table entry that Xen's "writable page tables" emulate
// for a PV kernel (docs/abi.md §12.5; pv/ptwr.cc), after LOCK (F0), operand
// size (66) and an ignored segment override, each optional, in any order,
// then one optional REX.
// Of 1, 2, 4 or 8 bytes (byte opcode; else REX.W 8, 66 2, neither 4): MOV
// r/m, r (88, 89) and MOV r/m, imm (C6 /0 ib, C7 /0 iw/id); XCHG r/m, r
// (86, 87); AND and OR r/m with r (20, 21; 08, 09), imm8 (80 /4, /1; 83 /4,
// /1 sign-extended) or imm16/32 (81 /4, /1). 64-bit only: CMPXCHG r/m64, r64
// (0F B1); BTS and BTR r/m64, imm8 (0F BA /5, /6). Only a memory operand.
// One segment override 64-bit mode ignores (2e, 36, 3e, 26) is taken; any
// other prefix (address size, %fs:/%gs:, REP), LOCK on a MOV: not decoded.
enum class PteOp : uint8_t { None, Mov, Xchg, Cmpxchg, And, Or, Bts, Btr };

struct PteWriteInsn {
    PteOp op = PteOp::None;
    uint8_t size = 0;       // bytes written: 1, 2, 4 or 8
    uint8_t reg = 0;        // XCHG: the register that receives the old value (RAX..R15)
    uint8_t reg_shift = 0;  // 8 for AH, CH, DH, BH (a byte form without REX), else 0
    uint8_t len = 0;        // the instruction's length
    uint64_t ea = 0;        // the memory operand's effective address
    uint64_t src = 0;       // the value, `size` bytes (register or sign-extended immediate); BTS/BTR: the bit
};

// RAX..R15 in ModRM numbering: an array in that order, or the words of a
// saved frame picked by a map (pv/ptwr.cc reads the trap frame in place by
// cpu/traps.h kTrapFrameGpr, without a copy of all sixteen for the one or
// two an address uses).
struct GprView {
    const uint64_t* words;
    const uint8_t* map = nullptr;   // map[i]: register i's word; none: words[i]
    GprView(const uint64_t* regs) : words(regs) {}   // NOLINT: an array reads as a view
    GprView(const uint64_t* w, const uint8_t* m) : words(w), map(m) {}
    uint64_t operator[](unsigned i) const { return map ? words[map[i & 15]] : words[i & 15]; }
};

// b: the n bytes read at `rip`; regs: RAX..R15, for the address (base,
// index, RIP-relative) and the source. decode_wrprotect's forms first.
PteWriteInsn decode_pte_write(const uint8_t* b, unsigned n, GprView regs, uint64_t rip);

// Linux's write-protect of a PTE (ptep_set_wrprotect, fork's copy of every
// parent PTE): clear_bit of the constant _PAGE_BIT_RW, which
// arch/x86/include/asm/bitops.h makes LOCK (or DS, patched for one CPU)
// ANDB $imm8 on the entry's low byte: one prefix, maybe a REX, 80 /4 ib, a
// register or register-and-index address with or without a disp8. Taken
// in a few compares, with exactly the fields the general decoder gives it
// (tests/arch/guest_decode_test.cc compares the two on every such form);
// false for anything else. Inline: the #PF path (pv/ptwr.cc) tries it
// before its call of decode_pte_write.
[[gnu::always_inline]] inline bool decode_wrprotect(const uint8_t* b, unsigned n, GprView regs, PteWriteInsn& in)
{
    if (n < 4 || (b[0] != 0xf0 && b[0] != 0x3e)) return false;
    unsigned i = 1;
    const uint8_t rex = (b[1] & 0xf0) == 0x40 ? b[i++] : 0;
    if (n < i + 3 || b[i] != 0x80) return false;
    const uint8_t modrm = b[i + 1];
    const unsigned mod = modrm >> 6, rm = modrm & 7;
    if (mod > 1 || ((modrm >> 3) & 7) != 4) return false;
    i += 2;
    uint64_t ea;
    if (rm == 4) {   // SIB, as the general decoder reads it
        const uint8_t sib = b[i++];
        if ((sib & 7) == 5 && mod == 0) return false;
        const unsigned index = ((sib >> 3) & 7) | (rex & 2 ? 8 : 0);
        ea = regs[(sib & 7) | (rex & 1 ? 8 : 0)] + (index != 4 ? regs[index] << (sib >> 6) : 0);
    } else {
        if (rm == 5 && mod == 0) return false;   // RIP-relative
        ea = regs[rm | (rex & 1 ? 8 : 0)];
    }
    if (mod == 1) {
        if (i >= n) return false;
        ea += uint64_t(int64_t(int8_t(b[i++])));
    }
    if (i >= n) return false;
    in.op = PteOp::And;
    in.size = 1;
    // ModRM.reg 4 (/4) of a byte form: AH without any REX, else SPL or,
    // with REX.R, R12B.
    in.reg = uint8_t(rex ? 4 | (rex & 4 ? 8 : 0) : 0);
    in.reg_shift = rex ? 0 : 8;
    in.src = b[i++];
    in.len = uint8_t(i);
    in.ea = ea;
    return true;
}

// The arithmetic of pte_write_flags (below).
namespace pte_flags {

// The operand size's mask: 1, 2, 4 or 8 bytes.
constexpr uint64_t size_mask(unsigned size) { return size == 8 ? ~0ull : (1ull << (8 * size)) - 1; }

// The arithmetic flags of RFLAGS (cpu/cpu_bits.h).
constexpr uint64_t kCf = RFLAGS_CF, kPf = RFLAGS_PF, kAf = RFLAGS_AF, kZf = RFLAGS_ZF, kSf = RFLAGS_SF, kOf = RFLAGS_OF;

// CF and OF clear; PF (even parity of the low byte), ZF and SF of the
// result `r` at the operand's size.
[[gnu::always_inline]] inline uint64_t logic(uint64_t flags, uint64_t r, unsigned size = 8)
{
    r &= size_mask(size);
    flags &= ~(kCf | kPf | kZf | kSf | kOf);
    if (!__builtin_parity(unsigned(r & 0xff))) flags |= kPf;
    if (r == 0) flags |= kZf;
    if (r >> (8 * size - 1)) flags |= kSf;
    return flags;
}

} // namespace pte_flags

// RFLAGS after the instruction (`in` the flags before): CMPXCHG's are
// CMP RAX, old's; AND's and OR's the result's at the operand's size (CF,
// OF clear; AF kept, it is undefined); BTS's and BTR's CF the bit's old
// value (the rest kept); MOV and XCHG change none. `old` is the operand's
// value before (the entry's bytes at the operand, low-aligned), `rax` the
// guest's.
// Inline: the #PF path (pv/ptwr.cc) pays no call for it.
[[gnu::always_inline]] inline uint64_t pte_write_flags(const PteWriteInsn& in, uint64_t flags, uint64_t old, uint64_t rax)
{
    using namespace pte_flags;
    switch (in.op) {
    case PteOp::Cmpxchg: {   // CMP RAX, old: RAX - old
        const uint64_t r = rax - old;
        flags = logic(flags, r) & ~kAf;
        if (rax < old) flags |= kCf;
        if (((rax ^ old) & (rax ^ r)) >> 63) flags |= kOf;
        if ((rax ^ old ^ r) & 0x10) flags |= kAf;
        return flags;
    }
    case PteOp::And: return logic(flags, old & in.src, in.size);
    case PteOp::Or: return logic(flags, old | in.src, in.size);
    case PteOp::Bts: case PteOp::Btr: return (flags & ~kCf) | ((old >> in.src) & 1 ? kCf : 0);
    default: return flags;
    }
}

// XCHG's register after it, from its value `reg` before and the operand's
// old value: 8 bytes replace it, 4 zero-extend, 2 and 1 replace only their
// bytes (AH..BH: bits 15:8).
uint64_t pte_xchg_result(const PteWriteInsn& in, uint64_t reg, uint64_t old);

} // namespace pvmmu::x86
