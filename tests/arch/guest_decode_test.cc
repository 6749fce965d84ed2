// The decoder behind the bare-metal hypervisor's emulation for a PV kernel
// (pv/decode.h, docs/abi.md §10 "Emulation"), compiled for the host:
// only the exact instructions are taken, short reads and other prefixes are
// refused, and INT n is believed only when its bytes and the #GP's error code
// agree.
#include <gtest/gtest.h>

#include <vector>

#include <pvmmu/abi.h>

#include "pv/decode.h"

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

// Writes to a page-table entry (decode_pte_write, pv/ptwr.cc). Registers
// hold distinct values, so an address made of the wrong ones is caught.
namespace ptw {

constexpr uint64_t kRip = 0xffff800000100000;
const uint64_t kRegs[16] = {0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 0x8000,
                            0x9000, 0xa000, 0xb000, 0xc000, 0xd000, 0xe000, 0xf000, 0x10000};

PteWriteInsn decode(std::vector<uint8_t> b) { return decode_pte_write(b.data(), unsigned(b.size()), kRegs, kRip); }

} // namespace ptw

TEST(DecodePteWrite, ForeignPrefixedShortOrRegisterFormsAreNotTaken)
{
    using ptw::decode;
    EXPECT_EQ(decode({}).op, PteOp::None);
    EXPECT_EQ(decode({0x48, 0x89}).op, PteOp::None);                     // no ModRM
    EXPECT_EQ(decode({0x48, 0x89, 0x07 | 0x80}).op, PteOp::None);        // disp32 cut short
    EXPECT_EQ(decode({0x48, 0x89, 0xc7}).op, PteOp::None);               // a register operand
    EXPECT_EQ(decode({0x67, 0x48, 0x89, 0x07}).op, PteOp::None);         // address size
    EXPECT_EQ(decode({0x64, 0x48, 0x89, 0x07}).op, PteOp::None);         // %fs:
    EXPECT_EQ(decode({0xf3, 0x48, 0x89, 0x07}).op, PteOp::None);         // REP
    EXPECT_EQ(decode({0xf0, 0x48, 0x89, 0x07}).op, PteOp::None);         // LOCK MOV: #UD on the CPU
    EXPECT_EQ(decode({0xf0, 0x0f, 0xb1, 0x17}).op, PteOp::None);         // 32-bit CMPXCHG
    EXPECT_EQ(decode({0xf0, 0x66, 0x0f, 0xb1, 0x17}).op, PteOp::None);   // 16-bit CMPXCHG
    EXPECT_EQ(decode({0xf0, 0x66, 0x0f, 0xba, 0x37, 5}).op, PteOp::None);   // 16-bit BTR
    EXPECT_EQ(decode({0xf0, 0x0f, 0xba, 0x37, 5}).op, PteOp::None);      // 32-bit BTR
    EXPECT_EQ(decode({0x66, 0x66, 0x89, 0x07}).op, PteOp::None);         // 66 twice
    EXPECT_EQ(decode({0xf0, 0xf0, 0x20, 0x07}).op, PteOp::None);         // LOCK twice
    EXPECT_EQ(decode({0x48, 0x66, 0x89, 0x07}).op, PteOp::None);         // REX not last: the CPU ignores it
    EXPECT_EQ(decode({0xf0, 0x88, 0x07}).op, PteOp::None);               // LOCK MOV m8
    EXPECT_EQ(decode({0xf0, 0x66, 0x89, 0x07}).op, PteOp::None);         // LOCK MOV m16
    EXPECT_EQ(decode({0xc6, 0x0f, 0}).op, PteOp::None);                  // C6 /1
    EXPECT_EQ(decode({0xc6, 0x07}).op, PteOp::None);                     // imm8 cut short
    EXPECT_EQ(decode({0x66, 0xc7, 0x07, 0}).op, PteOp::None);            // imm16 cut short
    EXPECT_EQ(decode({0xf0, 0x80, 0x07, 1}).op, PteOp::None);            // ADD m8, not AND/OR
    EXPECT_EQ(decode({0xf0, 0x80, 0x37, 1}).op, PteOp::None);            // XOR m8
    EXPECT_EQ(decode({0x88, 0xc7}).op, PteOp::None);                     // a byte register operand
    EXPECT_EQ(decode({0x48, 0xc7, 0x0f, 0, 0, 0, 0}).op, PteOp::None);   // C7 /1
    EXPECT_EQ(decode({0x48, 0xc7, 0x07, 0, 0}).op, PteOp::None);         // imm32 cut short
    EXPECT_EQ(decode({0x48, 0x83, 0x07, 1}).op, PteOp::None);            // ADD, not AND/OR
    EXPECT_EQ(decode({0xf0, 0x48, 0x0f, 0xba, 0x27, 5}).op, PteOp::None);   // BT /4 writes nothing
    EXPECT_EQ(decode({0xf0, 0x48, 0x0f, 0xba, 0x3f, 5}).op, PteOp::None);   // BTC /7
    EXPECT_EQ(decode({0xf0, 0x48, 0x0f, 0xba, 0x37}).op, PteOp::None);      // BTR without its imm8
    EXPECT_EQ(decode({0xf0, 0x48, 0x0f, 0xb3, 0x37}).op, PteOp::None);      // BTR r64: not decoded
}

TEST(DecodePteWrite, MovGivesValueSizeAddressAndLength)
{
    using ptw::decode;
    using ptw::kRegs;
    PteWriteInsn in = decode({0x48, 0x89, 0x37});   // mov %rsi, (%rdi)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.size, 8);
    EXPECT_EQ(in.src, kRegs[6]);
    EXPECT_EQ(in.ea, kRegs[7]);
    EXPECT_EQ(in.len, 3);
    in = decode({0x4c, 0x89, 0x44, 0xca, 0xf8});   // mov %r8, -8(%rdx,%rcx,8)
    EXPECT_EQ(in.src, kRegs[8]);
    EXPECT_EQ(in.ea, kRegs[2] + kRegs[1] * 8 - 8);
    EXPECT_EQ(in.len, 5);
    in = decode({0x4b, 0x89, 0x84, 0x4b, 0x00, 0x01, 0x00, 0x00});   // mov %rax, 0x100(%r11,%r9,2)
    EXPECT_EQ(in.src, kRegs[0]);
    EXPECT_EQ(in.ea, kRegs[11] + kRegs[9] * 2 + 0x100);
    EXPECT_EQ(in.len, 8);
    in = decode({0x48, 0x89, 0x04, 0x24});   // mov %rax, (%rsp): SIB with no index
    EXPECT_EQ(in.ea, kRegs[4]);
    in = decode({0x48, 0x89, 0x04, 0x25, 0x10, 0x00, 0x00, 0x80});   // mov %rax, 0xffffffff80000010: no base
    EXPECT_EQ(in.ea, 0xffffffff80000010ull);
    in = decode({0x48, 0x89, 0x45, 0x00});   // mov %rax, 0(%rbp)
    EXPECT_EQ(in.ea, kRegs[5]);
    in = decode({0x49, 0x89, 0x45, 0x08});   // mov %rax, 8(%r13)
    EXPECT_EQ(in.ea, kRegs[13] + 8);
    in = decode({0x48, 0x89, 0x05, 0x10, 0x00, 0x00, 0x00});   // mov %rax, 0x10(%rip)
    EXPECT_EQ(in.ea, ptw::kRip + 7 + 0x10);
    in = decode({0x48, 0xc7, 0x05, 0xf0, 0xff, 0xff, 0xff, 0x67, 0x00, 0x00, 0x80});   // movq $imm, -0x10(%rip)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.len, 11);
    EXPECT_EQ(in.ea, ptw::kRip + 11 - 0x10);
    EXPECT_EQ(in.src, 0xffffffff80000067ull);   // sign-extended
    in = decode({0x89, 0x77, 0x04});   // mov %esi, 4(%rdi): half an entry
    EXPECT_EQ(in.size, 4);
    EXPECT_EQ(in.ea, kRegs[7] + 4);
    EXPECT_EQ(in.src, kRegs[6] & 0xffffffff);
    in = decode({0xc7, 0x07, 0x67, 0x00, 0x00, 0x80});   // movl $0x80000067, (%rdi)
    EXPECT_EQ(in.size, 4);
    EXPECT_EQ(in.src, 0x80000067u);   // not sign-extended past 32 bits
}

TEST(DecodePteWrite, ReadModifyWritesGiveTheirOperands)
{
    using ptw::decode;
    using ptw::kRegs;
    PteWriteInsn in = decode({0x48, 0x87, 0x0f});   // xchg %rcx, (%rdi)
    EXPECT_EQ(in.op, PteOp::Xchg);
    EXPECT_EQ(in.reg, 1);
    EXPECT_EQ(in.src, kRegs[1]);
    in = decode({0xf0, 0x4c, 0x0f, 0xb1, 0x0e});   // lock cmpxchg %r9, (%rsi)
    EXPECT_EQ(in.op, PteOp::Cmpxchg);
    EXPECT_EQ(in.src, kRegs[9]);
    EXPECT_EQ(in.ea, kRegs[6]);
    EXPECT_EQ(in.len, 5);
    in = decode({0xf0, 0x48, 0x09, 0x37});   // lock or %rsi, (%rdi)
    EXPECT_EQ(in.op, PteOp::Or);
    EXPECT_EQ(in.src, kRegs[6]);
    in = decode({0xf0, 0x48, 0x21, 0x37});   // lock and %rsi, (%rdi)
    EXPECT_EQ(in.op, PteOp::And);
    in = decode({0xf0, 0x48, 0x83, 0x27, 0xdf});   // lock andq $-33, (%rdi)
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.src, ~0x20ull);
    EXPECT_EQ(in.len, 5);
    in = decode({0xf0, 0x48, 0x81, 0x0f, 0x00, 0x00, 0x00, 0x80});   // lock orq $imm32, (%rdi)
    EXPECT_EQ(in.op, PteOp::Or);
    EXPECT_EQ(in.src, 0xffffffff80000000ull);
    in = decode({0xf0, 0x48, 0x0f, 0xba, 0x37, 0x05});   // lock btrq $5, (%rdi)
    EXPECT_EQ(in.op, PteOp::Btr);
    EXPECT_EQ(in.src, 5u);
    EXPECT_EQ(in.len, 6);
    in = decode({0xf0, 0x48, 0x0f, 0xba, 0x2f, 0x47});   // lock btsq $0x47, (%rdi): modulo 64
    EXPECT_EQ(in.op, PteOp::Bts);
    EXPECT_EQ(in.src, 7u);
}

TEST(DecodePteWrite, FlagsAreTheInstructionsResults)
{
    constexpr uint64_t kCf = 1, kPf = 4, kZf = 0x40, kSf = 0x80, kOf = 0x800, kFixed = 2;
    PteWriteInsn in;
    in.op = PteOp::Cmpxchg;
    EXPECT_EQ(pte_write_flags(in, kFixed, 0x1067, 0x1067) & (kZf | kCf), kZf);
    EXPECT_EQ(pte_write_flags(in, kFixed | kZf, 0x1067, 0x1066) & (kZf | kCf), kCf);   // 0x1066 < 0x1067
    EXPECT_EQ(pte_write_flags(in, kFixed, 1ull << 63, 1) & kOf, kOf);   // 1 - INT64_MIN overflows
    in.op = PteOp::Btr;
    in.src = 5;
    EXPECT_EQ(pte_write_flags(in, kFixed | kZf, 0x67, 0) , kFixed | kZf | kCf);   // ZF kept
    EXPECT_EQ(pte_write_flags(in, kFixed | kCf, 0x47, 0), kFixed);
    in.op = PteOp::And;
    in.size = 8;
    in.src = 0;
    EXPECT_EQ(pte_write_flags(in, kFixed | kCf | kOf, 0x67, 0), kFixed | kZf | kPf);
    in.op = PteOp::Or;
    in.src = 1ull << 63;
    EXPECT_EQ(pte_write_flags(in, kFixed, 1, 0), kFixed | kSf);   // low byte 0x01: odd parity
    in.op = PteOp::Mov;
    EXPECT_EQ(pte_write_flags(in, kFixed | kCf, 0, 0), kFixed | kCf);
    // Narrower: the flags of the operand's bytes only (the entry's byte 0 is 0x67).
    in.op = PteOp::And;
    in.size = 1;
    in.src = 0xfd;
    EXPECT_EQ(pte_write_flags(in, kFixed | kCf, 0x8000000000000067, 0), kFixed | kPf);   // 0x65; bit 63 not SF
    in.src = 0x80;
    EXPECT_EQ(pte_write_flags(in, kFixed, 0x1ff, 0), kFixed | kSf);                // 0x80: SF from bit 7, odd parity
    in.op = PteOp::Or;
    in.size = 2;
    in.src = 0;
    EXPECT_EQ(pte_write_flags(in, kFixed, 0xffff0000, 0), kFixed | kZf | kPf);     // bits above 15 ignored
    in.src = 0x8000;
    EXPECT_EQ(pte_write_flags(in, kFixed, 0x3, 0), kFixed | kSf | kPf);            // SF from bit 15
}

// A segment override that 64-bit mode ignores (CS, SS, DS, ES: SDM Vol. 1
// §3.3.7.1): Linux's LOCK_PREFIX, patched for one CPU (alternatives'
// smp_locks), is DS (3e), so its write-protect at fork is ds andb $0xfd.
// Once only, and never %fs:/%gs:, whose base moves the address.
TEST(DecodePteWrite, AnIgnoredSegmentOverrideIsTaken)
{
    using ptw::decode;
    using ptw::kRegs;
    PteWriteInsn in = decode({0x3e, 0x41, 0x80, 0x24, 0x24, 0xfd});   // ds andb $0xfd, (%r12): Linux's
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.src, 0xfdu);
    EXPECT_EQ(in.ea, kRegs[12]);
    EXPECT_EQ(in.len, 6);
    for (uint8_t seg : {0x2e, 0x36, 0x26}) {
        in = decode({seg, 0xf0, 0x48, 0x89, 0x07});   // seg lock mov: #UD, not taken
        EXPECT_EQ(in.op, PteOp::None);
        in = decode({0xf0, seg, 0x48, 0x21, 0x07});   // lock seg and %rax, (%rdi)
        EXPECT_EQ(in.op, PteOp::And);
        EXPECT_EQ(in.len, 5);
    }
    in = decode({0x66, 0x3e, 0x89, 0x07});   // 66 ds mov %ax, (%rdi)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(decode({0x3e, 0x3e, 0x48, 0x89, 0x07}).op, PteOp::None);   // twice
    EXPECT_EQ(decode({0x3e, 0x2e, 0x48, 0x89, 0x07}).op, PteOp::None);   // two of them
    EXPECT_EQ(decode({0x65, 0x48, 0x89, 0x07}).op, PteOp::None);         // %gs:
}

// Linux's write-protect (LOCK or DS, maybe a REX, ANDB $imm8) has a short
// way through the decoder (decode_wrprotect, which the #PF path calls
// itself): every such form, with every ModRM, SIB and disp8 shape, decodes
// as it does after a second prefix (which the short way does not take) but
// for that prefix's byte of length, whole or cut short, and the short way
// itself, given the form followed by other bytes, gives exactly that.
TEST(DecodePteWrite, TheWriteProtectShortWayAgreesWithTheGeneralDecoder)
{
    using ptw::decode;
    unsigned compared = 0, taken = 0, short_taken = 0;
    // x's fields as y's, y decoded with one prefix byte more.
    const auto same_after_prefix = [](const PteWriteInsn& x, const PteWriteInsn& y) {
        EXPECT_EQ(x.size, y.size);
        EXPECT_EQ(x.reg, y.reg);
        EXPECT_EQ(x.reg_shift, y.reg_shift);
        EXPECT_EQ(x.len + 1, y.len);
        EXPECT_EQ(x.ea, y.ea);
        EXPECT_EQ(x.src, y.src);
    };
    std::vector<int> rexes = {-1};
    for (int r = 0x40; r <= 0x4f; ++r) rexes.push_back(r);
    for (uint8_t first : {0xf0, 0x3e}) {
        const uint8_t other = first == 0xf0 ? 0x26 : 0xf0;   // lock es / lock ds: the general way
        for (int rex : rexes) {
            for (unsigned modrm = 0; modrm < 256; ++modrm) {
                const bool sib = (modrm & 7) == 4 && (modrm >> 6) != 3;
                for (unsigned s = 0; s < (sib ? 256u : 1u); ++s) {
                    for (uint8_t tail : {0x00, 0x7f, 0x80, 0xfd}) {
                        std::vector<uint8_t> b = {first};
                        if (rex >= 0) b.push_back(uint8_t(rex));
                        b.push_back(0x80);
                        b.push_back(uint8_t(modrm));
                        if (sib) b.push_back(uint8_t(s));
                        // disp8 or imm8, then imm8: short bytes too (the first
                        // decodes to nothing when the form needs more)
                        b.push_back(tail);
                        for (unsigned cut = 0; cut < 2; ++cut) {
                            std::vector<uint8_t> with = {other};
                            with.insert(with.end(), b.begin(), b.end());
                            const PteWriteInsn a = decode(b), g = decode(with);
                            ASSERT_EQ(a.op, g.op) << std::hex << modrm << " " << s << " " << rex;
                            if (a.op != PteOp::None) {
                                ++taken;
                                same_after_prefix(a, g);
                            }
                            ++compared;
                            // The short way alone, on the bytes followed by
                            // others (an instruction's next ones), as the
                            // #PF path reads sixteen.
                            std::vector<uint8_t> padded = b;
                            padded.resize(16, 0xcc);
                            PteWriteInsn sw{};
                            const bool took = decode_wrprotect(padded.data(), unsigned(padded.size()), ptw::kRegs, sw);
                            std::vector<uint8_t> with_padded = {other};
                            with_padded.insert(with_padded.end(), padded.begin(), padded.end());
                            const PteWriteInsn gp = decode(with_padded);
                            // Exactly its forms: 80 /4 with no displacement or a disp8,
                            // a base register (neither RIP-relative nor a SIB's disp32).
                            const unsigned mod = modrm >> 6, rm = modrm & 7;
                            const bool no_base = mod == 0 && (rm == 5 || (sib && (s & 7) == 5));
                            EXPECT_EQ(took, ((modrm >> 3) & 7) == 4 && mod < 2 && !no_base)
                                << std::hex << modrm << " " << s << " " << rex;
                            if (took) {
                                ++short_taken;
                                EXPECT_EQ(sw.op, gp.op);
                                same_after_prefix(sw, gp);
                            }
                            b.push_back(0xfd);
                        }
                    }
                }
            }
        }
    }
    EXPECT_GT(taken, 0u);
    EXPECT_GT(short_taken, 0u);
    EXPECT_GT(compared, 100000u);
    // Linux's own, from a kernel patched for one CPU: ds andb $0xfd, (%r12),
    // the short way's, followed by the next instruction's bytes.
    const PteWriteInsn in = decode({0x3e, 0x41, 0x80, 0x24, 0x24, 0xfd});
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.len, 6);
    const uint8_t linux_wp[16] = {0x3e, 0x41, 0x80, 0x24, 0x24, 0xfd, 0x5b, 0x5d};
    PteWriteInsn sw{};
    ASSERT_TRUE(decode_wrprotect(linux_wp, sizeof(linux_wp), ptw::kRegs, sw));
    EXPECT_EQ(sw.ea, ptw::kRegs[12]);
    EXPECT_EQ(sw.src, 0xfdu);
    EXPECT_EQ(sw.len, 6);
}

// Byte and word forms (Linux's clear_bit(_PAGE_BIT_RW) is lock andb $0xfd)
// and the 32-bit read-modify-writes: the size from the opcode and prefixes,
// the operand truncated to it, immediates sign-extended to it.
TEST(DecodePteWrite, ByteWordAndDwordFormsGiveSizeAndOperand)
{
    using ptw::decode;
    using ptw::kRegs;
    PteWriteInsn in = decode({0xf0, 0x80, 0x27, 0xfd});   // lock andb $0xfd, (%rdi)
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.src, 0xfdu);
    EXPECT_EQ(in.ea, kRegs[7]);
    EXPECT_EQ(in.len, 4);
    in = decode({0xf0, 0x80, 0x4f, 0x01, 0x80});   // lock orb $0x80, 1(%rdi)
    EXPECT_EQ(in.op, PteOp::Or);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.src, 0x80u);
    EXPECT_EQ(in.ea, kRegs[7] + 1);
    EXPECT_EQ(in.len, 5);
    in = decode({0xf0, 0x20, 0x27});   // lock and %ah, (%rdi): no REX, reg 4 is AH
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.src, (kRegs[0] >> 8) & 0xff);
    in = decode({0xf0, 0x40, 0x08, 0x27});   // lock or %spl, (%rdi): with a REX, SPL
    EXPECT_EQ(in.op, PteOp::Or);
    EXPECT_EQ(in.src, kRegs[4] & 0xff);
    EXPECT_EQ(in.len, 4);
    in = decode({0x44, 0x88, 0x0f});   // mov %r9b, (%rdi)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.src, kRegs[9] & 0xff);
    in = decode({0xc6, 0x47, 0x07, 0x80});   // movb $0x80, 7(%rdi)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.src, 0x80u);
    EXPECT_EQ(in.ea, kRegs[7] + 7);
    in = decode({0x86, 0x3f});   // xchg %bh, (%rdi)
    EXPECT_EQ(in.op, PteOp::Xchg);
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.reg, 3);
    EXPECT_EQ(in.reg_shift, 8);
    EXPECT_EQ(in.src, (kRegs[3] >> 8) & 0xff);
    in = decode({0x66, 0x80, 0x27, 0xfd});   // 66 on a byte form: ignored, as by the CPU
    EXPECT_EQ(in.size, 1);
    in = decode({0x48, 0x86, 0x3f});   // REX.W on a byte form: ignored; the REX makes reg 7 DIL
    EXPECT_EQ(in.size, 1);
    EXPECT_EQ(in.reg, 7);
    EXPECT_EQ(in.reg_shift, 0);

    in = decode({0x66, 0x89, 0x77, 0x02});   // mov %si, 2(%rdi)
    EXPECT_EQ(in.op, PteOp::Mov);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.src, kRegs[6] & 0xffff);
    EXPECT_EQ(in.ea, kRegs[7] + 2);
    in = decode({0x66, 0xc7, 0x07, 0x34, 0x92});   // movw $0x9234, (%rdi)
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.src, 0x9234u);
    EXPECT_EQ(in.len, 5);
    in = decode({0x66, 0xf0, 0x09, 0x37});   // lock orw %si, (%rdi): 66 before LOCK
    EXPECT_EQ(in.op, PteOp::Or);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.src, kRegs[6] & 0xffff);
    in = decode({0xf0, 0x66, 0x83, 0x27, 0xfe});   // lock andw $-2, (%rdi): sign-extended to 16 bits
    EXPECT_EQ(in.op, PteOp::And);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.src, 0xfffeu);
    in = decode({0xf0, 0x66, 0x81, 0x0f, 0x00, 0x80});   // lock orw $0x8000, (%rdi)
    EXPECT_EQ(in.src, 0x8000u);
    EXPECT_EQ(in.len, 6);
    in = decode({0x66, 0x41, 0x87, 0x38});   // xchg %di, (%r8): REX.B with 66
    EXPECT_EQ(in.op, PteOp::Xchg);
    EXPECT_EQ(in.size, 2);
    EXPECT_EQ(in.ea, kRegs[8]);
    in = decode({0x66, 0x48, 0x89, 0x37});   // 66 and REX.W: REX.W wins, 64-bit
    EXPECT_EQ(in.size, 8);
    EXPECT_EQ(in.src, kRegs[6]);
    in = decode({0xf0, 0x66, 0x48, 0x0f, 0xb1, 0x17});   // so a CMPXCHG with both is taken
    EXPECT_EQ(in.op, PteOp::Cmpxchg);
    EXPECT_EQ(in.size, 8);

    in = decode({0x87, 0x07});   // xchg %eax, (%rdi)
    EXPECT_EQ(in.op, PteOp::Xchg);
    EXPECT_EQ(in.size, 4);
    in = decode({0xf0, 0x83, 0x27, 0xfd});   // lock andl $-3, (%rdi)
    EXPECT_EQ(in.size, 4);
    EXPECT_EQ(in.src, 0xfffffffdu);
}

TEST(DecodePteWrite, XchgResultReplacesOnlyItsBytes)
{
    PteWriteInsn in;
    in.op = PteOp::Xchg;
    in.size = 8;
    EXPECT_EQ(pte_xchg_result(in, 0x1111222233334444, 0x8000000000000067), 0x8000000000000067u);
    in.size = 4;
    EXPECT_EQ(pte_xchg_result(in, 0x1111222233334444, 0x8000000000000067), 0x67u);   // zero-extended
    in.size = 2;
    EXPECT_EQ(pte_xchg_result(in, 0x1111222233334444, 0xabcd), 0x111122223333abcdu);
    in.size = 1;
    EXPECT_EQ(pte_xchg_result(in, 0x1111222233334444, 0xab), 0x11112222333344abu);
    in.reg_shift = 8;   // AH..BH
    EXPECT_EQ(pte_xchg_result(in, 0x1111222233334444, 0xab), 0x111122223333ab44u);
}

} // namespace
} // namespace pvmmu::x86
