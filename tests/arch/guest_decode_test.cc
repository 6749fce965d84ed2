// The decoder behind the bare-metal hypervisor's emulation for a PV kernel
// (arch/guest_decode.h, docs/abi.md §10 "Emulation"), compiled for the host:
// only the exact instructions are taken, short reads and other prefixes are
// refused, and INT n is believed only when its bytes and the #GP's error code
// agree.
#include <gtest/gtest.h>

#include <vector>

#include <pvmmu/abi.h>

#include "arch/guest_decode.h"

namespace pvmmu::x86 {
namespace {

PrivInsn decode(std::vector<uint8_t> b) { return decode_privileged(b.data(), unsigned(b.size())); }

TEST(DecodePrivileged, ShortOrForeignBytesAreNotEmulated)
{
    EXPECT_EQ(decode({}).op, PrivOp::None);
    EXPECT_EQ(decode({0x0f}).op, PrivOp::None);
    EXPECT_EQ(decode({0x48}).op, PrivOp::None);
    EXPECT_EQ(decode({0x48, 0x0f}).op, PrivOp::None);
    EXPECT_EQ(decode({0x0f, 0x20}).op, PrivOp::None);           // mov from CR without its ModRM
    EXPECT_EQ(decode({0x66, 0x0f, 0x06}).op, PrivOp::None);     // an operand-size prefix
    EXPECT_EQ(decode({0x2e, 0x0f, 0x09}).op, PrivOp::None);     // a segment override
    EXPECT_EQ(decode({0x48, 0x48, 0x0f, 0x06}).op, PrivOp::None);   // two REX
    EXPECT_EQ(decode({0x0f, 0x08}).op, PrivOp::None);           // invd
    EXPECT_EQ(decode({0xf4}).op, PrivOp::None);                 // hlt: #GP on Xen too
    EXPECT_EQ(decode({0x66, 0x0f, 0x23, 0xf8}).op, PrivOp::None);   // a prefix before 0F
    EXPECT_EQ(decode({0xf3, 0xfa}).op, PrivOp::None);           // rep cli
    EXPECT_EQ(decode({0x66, 0x66, 0xed}).op, PrivOp::None);     // a prefix twice
    EXPECT_EQ(decode({0x48, 0x66, 0xed}).op, PrivOp::None);     // REX not last
    EXPECT_EQ(decode({0x67, 0x6c}).op, PrivOp::None);           // an address-size override
    EXPECT_EQ(decode({0x64, 0x6e}).op, PrivOp::None);           // a segment override (FS)
    EXPECT_EQ(decode({0xe4}).op, PrivOp::None);                 // in without its port
    EXPECT_EQ(decode({0x66}).op, PrivOp::None);
    EXPECT_EQ(decode({0xf3}).op, PrivOp::None);
}

TEST(DecodePrivileged, MovDrNamesItsRegisters)
{
    PrivInsn in = decode({0x0f, 0x23, 0xf8});   // mov %rax, %dr7
    EXPECT_EQ(in.op, PrivOp::WriteDr);
    EXPECT_EQ(in.cr, 7);
    EXPECT_EQ(in.reg, 0);
    EXPECT_EQ(in.len, 3);
    in = decode({0x41, 0x0f, 0x21, 0xf3});   // mov %dr6, %r11
    EXPECT_EQ(in.op, PrivOp::ReadDr);
    EXPECT_EQ(in.cr, 6);
    EXPECT_EQ(in.reg, 11);
    EXPECT_EQ(in.len, 4);
    in = decode({0x44, 0x0f, 0x21, 0xc0});   // mov %dr8, %rax: REX.R names a register that is not there
    EXPECT_EQ(in.op, PrivOp::ReadDr);
    EXPECT_EQ(in.cr, 8);
    EXPECT_EQ(decode({0x0f, 0x21}).op, PrivOp::None);   // no ModRM
}

TEST(DecodePrivileged, PortIoTakesItsSizeFromOpcodeAndPrefix)
{
    PrivInsn in = decode({0xec});   // inb %dx, %al
    EXPECT_EQ(in.op, PrivOp::In);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.port, -1);
    EXPECT_EQ(in.len, 1);
    in = decode({0xed});   // inl %dx, %eax
    EXPECT_EQ(in.size, 4);
    in = decode({0x66, 0xed});   // inw %dx, %ax
    EXPECT_EQ(in.op, PrivOp::In);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.len, 2);
    in = decode({0x48, 0xed});   // REX.W does not make it 8 bytes
    EXPECT_EQ(in.size, 4);
    EXPECT_EQ(in.len, 2);
    in = decode({0xe4, 0x80});   // inb $0x80, %al
    EXPECT_EQ(in.op, PrivOp::In);
    EXPECT_EQ(in.port, 0x80);
    EXPECT_EQ(in.len, 2);
    in = decode({0x66, 0xe7, 0xff});   // outw %ax, $0xff
    EXPECT_EQ(in.op, PrivOp::Out);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.port, 0xff);
    EXPECT_EQ(in.len, 3);
    in = decode({0xee});   // outb %al, %dx
    EXPECT_EQ(in.op, PrivOp::Out);
    EXPECT_EQ(in.size, 1);
    in = decode({0xf3, 0x6d});   // rep insl
    EXPECT_EQ(in.op, PrivOp::Ins);
    EXPECT_EQ(in.size, 4);
    EXPECT_TRUE(in.rep);
    EXPECT_EQ(in.len, 2);
    in = decode({0x66, 0xf3, 0x48, 0x6f});   // rep outsw, both prefixes and a REX
    EXPECT_EQ(in.op, PrivOp::Outs);
    EXPECT_EQ(in.size, 2);
    EXPECT_TRUE(in.rep);
    EXPECT_EQ(in.len, 4);
    in = decode({0x6e});   // outsb
    EXPECT_EQ(in.op, PrivOp::Outs);
    EXPECT_FALSE(in.rep);
    EXPECT_EQ(decode({0xfa}).op, PrivOp::Cli);
    EXPECT_EQ(decode({0xfb}).len, 1);
}

TEST(DecodePrivileged, TakesTheEmulatedInstructionsWithTheirLength)
{
    PrivInsn in = decode({0x0f, 0x06, 0xc3});
    EXPECT_EQ(in.op, PrivOp::Clts);
    EXPECT_EQ(in.len, 2);
    in = decode({0x0f, 0x09});
    EXPECT_EQ(in.op, PrivOp::Wbinvd);
    EXPECT_EQ(in.len, 2);
    in = decode({0x0f, 0x32});
    EXPECT_EQ(in.op, PrivOp::Rdmsr);
    EXPECT_EQ(in.len, 2);
    in = decode({0x0f, 0x30});
    EXPECT_EQ(in.op, PrivOp::Wrmsr);
    EXPECT_EQ(in.len, 2);
    in = decode({0x48, 0x0f, 0x32});   // REX.W is allowed and ignored
    EXPECT_EQ(in.op, PrivOp::Rdmsr);
    EXPECT_EQ(in.len, 3);
}

TEST(DecodePrivileged, MovCrNamesItsRegistersWithRexExtensions)
{
    PrivInsn in = decode({0x0f, 0x20, 0xd8});   // mov %cr3, %rax
    EXPECT_EQ(in.op, PrivOp::ReadCr);
    EXPECT_EQ(in.cr, 3);
    EXPECT_EQ(in.reg, 0);
    EXPECT_EQ(in.len, 3);
    in = decode({0x41, 0x0f, 0x20, 0xd9});   // mov %cr3, %r9
    EXPECT_EQ(in.cr, 3);
    EXPECT_EQ(in.reg, 9);
    EXPECT_EQ(in.len, 4);
    in = decode({0x44, 0x0f, 0x20, 0xc0});   // mov %cr8, %rax
    EXPECT_EQ(in.cr, 8);
    EXPECT_EQ(in.reg, 0);
    in = decode({0x0f, 0x22, 0xd7});   // mov %rdi, %cr2
    EXPECT_EQ(in.op, PrivOp::WriteCr);
    EXPECT_EQ(in.cr, 2);
    EXPECT_EQ(in.reg, 7);
    in = decode({0x0f, 0x20, 0x18});   // ModRM.mod 0: still the register form
    EXPECT_EQ(in.op, PrivOp::ReadCr);
    EXPECT_EQ(in.cr, 3);
}

TEST(ForcedCpuid, OnlyTheWholeSignatureCounts)
{
    const uint8_t ok[] = {0x0f, 0x0b, 'x', 'e', 'n', 0x0f, 0xa2, 0x90};
    EXPECT_TRUE(is_forced_cpuid(ok, sizeof(ok)));
    EXPECT_FALSE(is_forced_cpuid(ok, kForcedCpuidLen - 1));   // the last byte not readable
    const uint8_t other[] = {0x0f, 0x0b, 'x', 'e', 'n', 0x0f, 0x31};   // rdtsc after the prefix
    EXPECT_FALSE(is_forced_cpuid(other, sizeof(other)));
    const uint8_t ud2[] = {0x0f, 0x0b, 0x90, 0x90, 0x90, 0x90, 0x90};
    EXPECT_FALSE(is_forced_cpuid(ud2, sizeof(ud2)));
}

TEST(SoftwareInt, TheBytesAndTheErrorCodeMustAgree)
{
    const uint8_t int80[] = {0xcd, 0x80};
    EXPECT_EQ(software_int_vector(int80, 2, 0x80 * 8 + 2), 0x80);    // a CPU's error code
    EXPECT_EQ(software_int_vector(int80, 2, 0x80 * 16 + 2), 0x80);   // QEMU TCG's
    EXPECT_EQ(software_int_vector(int80, 2, 0x81 * 8 + 2), -1);      // another gate: the code changed
    EXPECT_EQ(software_int_vector(int80, 2, 0x80 * 8 + 3), -1);      // EXT: not the instruction's
    EXPECT_EQ(software_int_vector(int80, 2, 0x80 * 8), -1);          // a GDT selector
    EXPECT_EQ(software_int_vector(int80, 2, 0), -1);
    EXPECT_EQ(software_int_vector(int80, 1, 0x80 * 8 + 2), -1);      // the immediate not readable
    const uint8_t int3[] = {0xcc, 0x90};
    EXPECT_EQ(software_int_vector(int3, 2, 3 * 8 + 2), -1);
    const uint8_t int0[] = {0xcd, 0x00};
    EXPECT_EQ(software_int_vector(int0, 2, 2), 0);
    const uint8_t int255[] = {0xcd, 0xff};
    EXPECT_EQ(software_int_vector(int255, 2, 0xff * 16 + 2), 0xff);
}

TEST(VmAssist, XensChecksTypeFirstThenCommand)
{
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 6), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 31), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, 64), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, ~0u), -XEN_EINVAL);
    EXPECT_EQ(vm_assist_result(7, 6), -XEN_EINVAL);   // the type before the command
    EXPECT_EQ(vm_assist_result(7, VMASST_TYPE_pae_extended_cr3), -XEN_ENOSYS);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_4gb_segments), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_4gb_segments_notify), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_pae_extended_cr3), 0);
    EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, VMASST_TYPE_runstate_update_flag), 0);   // guest_runstate.cc
}

TEST(VmAssist, AssistsPvmmuLacksCannotBeEnabledButDisabled)
{
    for (uint32_t t : {uint32_t(VMASST_TYPE_writable_pagetables), uint32_t(VMASST_TYPE_architectural_iopl),
                       uint32_t(VMASST_TYPE_m2p_strict)}) {
        EXPECT_EQ(vm_assist_result(VMASST_CMD_enable, t), -XEN_EINVAL) << t;
        EXPECT_EQ(vm_assist_result(VMASST_CMD_disable, t), 0) << t;
    }
}

} // namespace
} // namespace pvmmu::x86
