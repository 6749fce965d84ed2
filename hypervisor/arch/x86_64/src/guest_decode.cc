// See arch/guest_decode.h. Opcodes from the SDM Vol. 2 ("Opcode Map"):
// 0F 06 CLTS, 0F 09 WBINVD, 0F 20 /r MOV r64, CRn, 0F 22 /r MOV CRn, r64,
// 0F 30 WRMSR, 0F 32 RDMSR, CD ib INT imm8; REX is 0100WRXB.
#include "arch/guest_decode.h"

#include "arch/cpu_bits.h"

#include <pvmmu/abi.h>
#include <xen/arch-x86/cpuid.h>

namespace pvmmu::x86 {

PrivInsn decode_privileged(const uint8_t* b, unsigned n)
{
    unsigned i = 0;
    uint8_t rex = 0;
    if (n > 0 && (b[0] & 0xf0) == 0x40) rex = b[i++];
    if (n < i + 2 || b[i] != 0x0f) return {};
    const auto done = [&](PrivOp op, unsigned len) { return PrivInsn{op, 0, 0, uint8_t(len)}; };
    switch (b[i + 1]) {
    case 0x06: return done(PrivOp::Clts, i + 2);
    case 0x09: return done(PrivOp::Wbinvd, i + 2);
    case 0x30: return done(PrivOp::Wrmsr, i + 2);
    case 0x32: return done(PrivOp::Rdmsr, i + 2);
    case 0x20: case 0x22: {   // register operands only: ModRM.mod is ignored
        if (n < i + 3) return {};
        const uint8_t modrm = b[i + 2];
        return PrivInsn{b[i + 1] == 0x20 ? PrivOp::ReadCr : PrivOp::WriteCr,
                        uint8_t(((modrm >> 3) & 7) | (rex & 4 ? 8 : 0)), uint8_t((modrm & 7) | (rex & 1 ? 8 : 0)),
                        uint8_t(i + 3)};
    }
    default: return {};
    }
}

bool emulated(const PrivInsn& in, uint32_t msr)
{
    switch (in.op) {
    case PrivOp::None: return false;
    case PrivOp::Clts: case PrivOp::Wbinvd: return true;
    case PrivOp::ReadCr: return in.cr == 0 || in.cr == 2 || in.cr == 3 || in.cr == 4;
    case PrivOp::WriteCr: return in.cr == 0 || in.cr == 2 || in.cr == 4;   // CR3: NEW_BASEPTR's work
    case PrivOp::Rdmsr:
        return msr == MSR_FS_BASE || msr == MSR_GS_BASE || msr == MSR_KERNEL_GS_BASE || msr == MSR_EFER;
    case PrivOp::Wrmsr: return msr == XEN_CPUID_FIRST_LEAF;   // the hypercall page's (CPUID 0x40000002 EBX)
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
    // What pvmmu enables: the assists that change nothing for a 64-bit guest.
    constexpr uint64_t kHas = (1ull << VMASST_TYPE_4gb_segments) | (1ull << VMASST_TYPE_4gb_segments_notify) |
                              (1ull << VMASST_TYPE_pae_extended_cr3);
    if (type >= 64 || !((kValid >> type) & 1)) return -XEN_EINVAL;
    switch (cmd) {
    case VMASST_CMD_enable: return (kHas >> type) & 1 ? 0 : -XEN_EINVAL;
    case VMASST_CMD_disable: return 0;
    default: return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
