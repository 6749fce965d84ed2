// See pv/decode.h. Opcodes from the SDM Vol. 2 ("Opcode Map"):
// 0F 06 CLTS, 0F 09 WBINVD, 0F 20 /r MOV r64, CRn, 0F 21 /r MOV r64, DRn,
// 0F 22 /r MOV CRn, r64, 0F 23 /r MOV DRn, r64, 0F 30 WRMSR, 0F 32 RDMSR,
// 6C/6D INS, 6E/6F OUTS, E4/E5 ib IN, E6/E7 ib OUT, EC/ED IN from %dx,
// EE/EF OUT to %dx, FA CLI, FB STI, CD ib INT imm8. REX is 0100WRXB and
// comes last, right before the opcode; 66 makes the odd (word) forms of
// port I/O 16-bit, which are 32-bit otherwise (REX.W does not widen them).
#include "pv/decode.h"

#include "cpu/cpu_bits.h"

#include <pvmmu/abi.h>
#include <xen/arch-x86/cpuid.h>

namespace pvmmu::x86 {

namespace {

// 0F xx, after `i` bytes of which the last may have been a REX.
PrivInsn decode_0f(const uint8_t* b, unsigned n, unsigned i, uint8_t rex)
{
    if (n < i + 2 || b[i] != 0x0f) return {};
    const auto done = [&](PrivOp op, unsigned len) { return PrivInsn{op, 0, 0, uint8_t(len)}; };
    switch (b[i + 1]) {
    case 0x06: return done(PrivOp::Clts, i + 2);
    case 0x09: return done(PrivOp::Wbinvd, i + 2);
    case 0x30: return done(PrivOp::Wrmsr, i + 2);
    case 0x32: return done(PrivOp::Rdmsr, i + 2);
    case 0x20: case 0x21: case 0x22: case 0x23: {   // register operands only: ModRM.mod is ignored
        if (n < i + 3) return {};
        static constexpr PrivOp kOps[4] = {PrivOp::ReadCr, PrivOp::ReadDr, PrivOp::WriteCr, PrivOp::WriteDr};
        const uint8_t modrm = b[i + 2];
        PrivInsn in{kOps[b[i + 1] - 0x20]};
        in.cr = uint8_t(((modrm >> 3) & 7) | (rex & 4 ? 8 : 0));
        in.reg = uint8_t((modrm & 7) | (rex & 1 ? 8 : 0));
        in.len = uint8_t(i + 3);
        return in;
    }
    default: return {};
    }
}

// Port I/O at b[i], with the prefixes seen: the even opcodes move a byte.
PrivInsn decode_io(const uint8_t* b, unsigned n, unsigned i, bool word, bool rep)
{
    if (n < i + 1) return {};
    const uint8_t op = b[i];
    PrivInsn in;
    in.size = uint8_t(op & 1 ? (word ? 2 : 4) : 1);
    in.len = uint8_t(i + 1);
    switch (op & 0xfe) {
    case 0x6c: in.op = PrivOp::Ins; in.rep = rep; return in;
    case 0x6e: in.op = PrivOp::Outs; in.rep = rep; return in;
    case 0xec: in.op = PrivOp::In; return in;
    case 0xee: in.op = PrivOp::Out; return in;
    case 0xe4: case 0xe6:
        if (n < i + 2) return {};
        in.op = op & 2 ? PrivOp::Out : PrivOp::In;
        in.port = b[i + 1];
        in.len = uint8_t(i + 2);
        return in;
    default: return {};
    }
}

} // namespace

PrivInsn decode_privileged(const uint8_t* b, unsigned n)
{
    // Legacy prefixes, each at most once, before the REX: only 66 and F3,
    // which port I/O takes. A segment or address-size override is not
    // decoded (docs/abi.md §12).
    unsigned i = 0;
    bool word = false, rep = false;
    for (; i < n; ++i) {
        if (b[i] == 0x66 && !word) word = true;
        else if (b[i] == 0xf3 && !rep) rep = true;
        else break;
    }
    uint8_t rex = 0;
    if (i < n && (b[i] & 0xf0) == 0x40) rex = b[i++];
    if (i < n && b[i] == 0x0f) return word || rep ? PrivInsn{} : decode_0f(b, n, i, rex);
    if (i < n && (b[i] == 0xfa || b[i] == 0xfb))
        return word || rep ? PrivInsn{} : PrivInsn{b[i] == 0xfa ? PrivOp::Cli : PrivOp::Sti, 0, 0, uint8_t(i + 1)};
    return decode_io(b, n, i, word, rep);
}

namespace {

// The bytes of a page-table write being decoded: a cursor that refuses to
// read past what could be fetched.
struct Bytes {
    const uint8_t* b;
    unsigned n;
    unsigned i = 0;
    bool ok = true;

    uint8_t u8() { return i < n ? b[i++] : (ok = false, 0); }
    int64_t s8() { return int8_t(u8()); }
    int64_t s16()
    {
        const uint16_t lo = u8();
        return int16_t(lo | uint16_t(u8()) << 8);
    }
    int64_t s32()
    {
        uint32_t v = 0;
        for (unsigned k = 0; k < 4; ++k) v |= uint32_t(u8()) << (8 * k);
        return int32_t(v);
    }
};

// ModRM ("32-Bit Addressing Forms with the ModR/M Byte", SIB, REX.RXB;
// SDM Vol. 2 §2.1.5, §2.2.1): the memory operand's address, less RIP's part
// (RIP-relative needs the length, known only after the immediate); *rip_rel
// set for it. `reg` receives ModRM.reg with REX.R.
uint64_t memory_operand(Bytes& c, uint8_t rex, GprView regs, uint8_t& reg, bool& rip_rel,
                        bool& is_memory)
{
    const uint8_t modrm = c.u8();
    const unsigned mod = modrm >> 6, rm = modrm & 7;
    reg = uint8_t(((modrm >> 3) & 7) | (rex & 4 ? 8 : 0));
    is_memory = mod != 3;
    rip_rel = false;
    if (!is_memory) return 0;
    uint64_t ea = 0;
    if (rm == 4) {   // SIB: scale 7:6, index 5:3 (4 without REX.X: none), base 2:0
        const uint8_t sib = c.u8();
        const unsigned index = ((sib >> 3) & 7) | (rex & 2 ? 8 : 0);
        const unsigned base = (sib & 7) | (rex & 1 ? 8 : 0);
        if (index != 4) ea += regs[index] << (sib >> 6);
        if ((sib & 7) == 5 && mod == 0) ea += uint64_t(c.s32());   // no base: disp32
        else ea += regs[base];
    } else if (rm == 5 && mod == 0) {
        rip_rel = true;
        ea = uint64_t(c.s32());
    } else {
        ea = regs[rm | (rex & 1 ? 8 : 0)];
    }
    if (mod == 1) ea += uint64_t(c.s8());
    else if (mod == 2) ea += uint64_t(c.s32());
    return ea;
}

// The byte opcodes (SDM Vol. 2 "Opcode Map", the even ones of each pair):
// 08 OR r/m8, r8; 20 AND r/m8, r8; 80 /1, /4 OR, AND r/m8, imm8; 86 XCHG
// r/m8, r8; 88 MOV r/m8, r8; C6 /0 MOV r/m8, imm8.
constexpr bool byte_opcode(uint8_t op)
{
    return op == 0x08 || op == 0x20 || op == 0x80 || op == 0x86 || op == 0x88 || op == 0xc6;
}

// The source register of a byte form ("Byte Registers", SDM Vol. 2
// §2.2.1.2): without any REX, 4-7 name AH, CH, DH, BH (bits 15:8 of RAX-RBX);
// with one, SPL-DIL and R8B-R15B, the low byte.
void byte_register(PteWriteInsn& in, uint8_t rex)
{
    if (!rex && in.reg >= 4 && in.reg < 8) {
        in.reg = uint8_t(in.reg - 4);
        in.reg_shift = 8;
    }
}

// The opcode's instruction at c (after the prefixes), what it writes.
// `word`: a 66 prefix, which REX.W overrides and a byte form ignores, as on
// the CPU ("Operand-Size and Address-Size Attributes", SDM Vol. 1 §3.6).
PteWriteInsn decode_pte_opcode(Bytes& c, uint8_t rex, bool lock, bool word, GprView regs, uint64_t rip)
{
    PteWriteInsn in;
    uint8_t op = c.u8();
    const bool two = op == 0x0f;
    if (two) op = c.u8();
    uint8_t reg;
    bool rip_rel, memory;
    const uint64_t ea = memory_operand(c, rex, regs, reg, rip_rel, memory);
    if (!c.ok || !memory) return {};
    in.size = uint8_t(!two && byte_opcode(op) ? 1 : rex & 8 ? 8 : word ? 2 : 4);
    in.reg = reg;
    if (in.size == 1) byte_register(in, rex);
    const uint64_t r = regs[in.reg] >> in.reg_shift;
    // An immediate of the operand's size, but at most 32 bits, sign-extended.
    const auto imm = [&] { return uint64_t(in.size == 1 ? c.s8() : in.size == 2 ? c.s16() : c.s32()); };
    if (!two) {
        switch (op) {
        case 0x88: case 0x89: in.op = PteOp::Mov; in.src = r; break;
        case 0xc6: case 0xc7:
            if ((reg & 7) != 0) return {};
            in.op = PteOp::Mov;
            in.src = imm();
            break;
        case 0x86: case 0x87: in.op = PteOp::Xchg; in.src = r; break;
        case 0x08: case 0x09: in.op = PteOp::Or; in.src = r; break;
        case 0x20: case 0x21: in.op = PteOp::And; in.src = r; break;
        case 0x80: case 0x81: case 0x83:
            if ((reg & 7) != 1 && (reg & 7) != 4) return {};
            in.op = (reg & 7) == 1 ? PteOp::Or : PteOp::And;
            in.src = op == 0x83 ? uint64_t(c.s8()) : imm();
            break;
        default: return {};
        }
    } else {
        switch (op) {
        case 0xb1: in.op = PteOp::Cmpxchg; in.src = r; break;
        case 0xba:
            if ((reg & 7) != 5 && (reg & 7) != 6) return {};
            in.op = (reg & 7) == 5 ? PteOp::Bts : PteOp::Btr;
            in.src = c.u8() & 63;   // a 64-bit operand takes the offset modulo 64
            break;
        default: return {};
        }
        // 64-bit only: a narrower CMPXCHG or bit offset is not decoded.
        if (in.size != 8) return {};
    }
    if (!c.ok) return {};
    if (in.op == PteOp::Mov && lock) return {};   // the CPU's #UD
    if (in.op != PteOp::Bts && in.op != PteOp::Btr) in.src &= pte_flags::size_mask(in.size);
    in.len = uint8_t(c.i);
    in.ea = rip_rel ? ea + rip + c.i : ea;   // RIP-relative: from the instruction's end
    return in;
}

} // namespace

PteWriteInsn decode_pte_write(const uint8_t* b, unsigned n, GprView regs, uint64_t rip)
{
    if (PteWriteInsn in; decode_wrprotect(b, n, regs, in)) return in;
    // LOCK, the operand size and one segment override that 64-bit mode
    // ignores (CS, SS, DS, ES: SDM Vol. 1 §3.3.7.1), each at most once, in
    // any order. Linux's LOCK_PREFIX is DS (3e) in a kernel its alternatives
    // patched for one CPU: its write-protect of a PTE is then ds andb $0xfd.
    // %fs: and %gs: are not taken: their base moves the address.
    Bytes c{b, n};
    bool lock = false, word = false, seg = false;
    for (; c.i < n; ++c.i) {
        const uint8_t p = b[c.i];
        if (p == 0xf0 && !lock) lock = true;
        else if (p == 0x66 && !word) word = true;
        else if ((p == 0x2e || p == 0x36 || p == 0x3e || p == 0x26) && !seg) seg = true;
        else break;
    }
    uint8_t rex = 0;
    if (c.i < n && (b[c.i] & 0xf0) == 0x40) rex = b[c.i++];
    return decode_pte_opcode(c, rex, lock, word, regs, rip);
}

uint64_t pte_xchg_result(const PteWriteInsn& in, uint64_t reg, uint64_t old)
{
    if (in.size == 8) return old;
    if (in.size == 4) return old & 0xffffffffu;   // a 32-bit result zero-extends
    const uint64_t m = pte_flags::size_mask(in.size) << in.reg_shift;
    return (reg & ~m) | ((old << in.reg_shift) & m);
}

bool emulated(const PrivInsn& in, uint32_t msr)
{
    switch (in.op) {
    case PrivOp::None: return false;
    case PrivOp::Clts: case PrivOp::Wbinvd: return true;
    // Port I/O, CLI, STI: by the virtual IOPL (pv/port_io.cc); MOV DRn: by
    // get/set_debugreg's rules, #UD for a register that does not exist.
    case PrivOp::In: case PrivOp::Out: case PrivOp::Ins: case PrivOp::Outs: case PrivOp::Cli: case PrivOp::Sti:
    case PrivOp::ReadDr: case PrivOp::WriteDr: return true;
    case PrivOp::ReadCr: return in.cr == 0 || in.cr == 2 || in.cr == 3 || in.cr == 4;
    case PrivOp::WriteCr: return in.cr == 0 || in.cr == 2 || in.cr == 3 || in.cr == 4;   // CR3: NEW_BASEPTR's path
    case PrivOp::Rdmsr:
        return msr == MSR_FS_BASE || msr == MSR_GS_BASE || msr == MSR_KERNEL_GS_BASE || msr == MSR_EFER;
    case PrivOp::Wrmsr:   // the segment bases (set_segment_base's), the hypercall page's (CPUID 0x40000002 EBX)
        return msr == MSR_FS_BASE || msr == MSR_GS_BASE || msr == MSR_KERNEL_GS_BASE || msr == XEN_CPUID_FIRST_LEAF;
    }
    return false;
}

bool is_forced_cpuid(const uint8_t* b, unsigned n)
{
    static constexpr uint8_t kInsn[kForcedCpuidLen] = {0x0f, 0x0b, 'x', 'e', 'n', 0x0f, 0xa2};
    if (n < kForcedCpuidLen) return false;
    for (unsigned i = 0; i < kForcedCpuidLen; ++i)
        if (b[i] != kInsn[i]) return false;
    return true;
}

int software_int_vector(const uint8_t* b, unsigned n, uint64_t error)
{
    if ((error & 3) != 2 || n < 2 || b[0] != 0xcd) return -1;
    const unsigned v = b[1];
    return error == v * 8 + 2 || error == v * 16 + 2 ? int(v) : -1;
}

} // namespace pvmmu::x86
