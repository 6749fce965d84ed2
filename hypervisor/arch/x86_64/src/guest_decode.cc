// See arch/guest_decode.h. Opcodes from the SDM Vol. 2 ("Opcode Map"):
// 0F 06 CLTS, 0F 09 WBINVD, 0F 20 /r MOV r64, CRn, 0F 21 /r MOV r64, DRn,
// 0F 22 /r MOV CRn, r64, 0F 23 /r MOV DRn, r64, 0F 30 WRMSR, 0F 32 RDMSR,
// 6C/6D INS, 6E/6F OUTS, E4/E5 ib IN, E6/E7 ib OUT, EC/ED IN from %dx,
// EE/EF OUT to %dx, FA CLI, FB STI, CD ib INT imm8. REX is 0100WRXB and
// comes last, right before the opcode; 66 makes the odd (word) forms of
// port I/O 16-bit, which are 32-bit otherwise (REX.W does not widen them).
#include "arch/guest_decode.h"

#include "arch/cpu_bits.h"

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

bool emulated(const PrivInsn& in, uint32_t msr)
{
    switch (in.op) {
    case PrivOp::None: return false;
    case PrivOp::Clts: case PrivOp::Wbinvd: return true;
    // Port I/O, CLI, STI: by the virtual IOPL (guest_io.cc); MOV DRn: by
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

long vm_assist_result(uint32_t cmd, uint32_t type)
{
    constexpr uint64_t kValid = (1ull << VMASST_TYPE_4gb_segments) | (1ull << VMASST_TYPE_4gb_segments_notify) |
                                (1ull << VMASST_TYPE_writable_pagetables) | (1ull << VMASST_TYPE_pae_extended_cr3) |
                                (1ull << VMASST_TYPE_architectural_iopl) |
                                (1ull << VMASST_TYPE_runstate_update_flag) | (1ull << VMASST_TYPE_m2p_strict);
    // What pvmmu enables: the assists that change nothing for a 64-bit guest,
    // and the runstate area's update flag.
    constexpr uint64_t kHas = (1ull << VMASST_TYPE_4gb_segments) | (1ull << VMASST_TYPE_4gb_segments_notify) |
                              (1ull << VMASST_TYPE_pae_extended_cr3) |
                              (1ull << VMASST_TYPE_runstate_update_flag);   // guest_runstate.cc
    if (type >= 64 || !((kValid >> type) & 1)) return -XEN_EINVAL;
    switch (cmd) {
    case VMASST_CMD_enable: return (kHas >> type) & 1 ? 0 : -XEN_EINVAL;
    case VMASST_CMD_disable: return 0;
    default: return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
