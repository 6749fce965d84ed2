// The forced-emulation CPUID's view of the processor's leaves, Xen 4.17's
// default PV policy (pv/cpuid.h, docs/abi.md §12.2), compiled for
// the host and fed made-up CPUs: only the features cpufeatureset.h marks
// 'A' pass, whatever the CPU has; AMD's copies of leaf 1 follow the masked
// leaf 1; Intel's are cleared; XSAVE and what needs XCR0 go when the
// hypervisor's CR4.OSXSAVE is clear.
#include <gtest/gtest.h>

#include <xen/arch-x86/cpufeatureset.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <string>

#include "pv/cpuid.h"

namespace pvmmu::x86 {
namespace {

constexpr uint32_t bit(unsigned f) { return 1u << (f % 32); }

// A made-up CPU: its leaves, every other one zero.
struct FakeCpu {
    std::map<std::pair<uint32_t, uint32_t>, CpuidRegs> leaves;
};
FakeCpu* g_cpu;

CpuidRegs fake_cpuid(uint32_t leaf, uint32_t sub)
{
    auto it = g_cpu->leaves.find({leaf, sub});
    if (it != g_cpu->leaves.end()) return it->second;
    // Leaves without subleaves ignore ECX; 7 and 0xD do not.
    it = g_cpu->leaves.find({leaf, 0});
    if (it == g_cpu->leaves.end() || leaf == 7 || leaf == 0xd) return {0, 0, 0, 0};
    return it->second;
}

// Every bit set in every leaf up to 0xD and 0x80000021: only the allow-list
// (and the bits Xen sets itself) can come out.
FakeCpu all_ones(bool amd, bool osxsave)
{
    FakeCpu c;
    for (uint32_t l = 1; l <= 0xd; ++l)
        for (uint32_t s = 0; s < 4; ++s) c.leaves[{l, s}] = {~0u, ~0u, ~0u, ~0u};
    for (uint32_t l = 0x80000001; l <= 0x80000021; ++l) c.leaves[{l, 0}] = {~0u, ~0u, ~0u, ~0u};
    c.leaves[{0, 0}] = {0xd, amd ? 0x68747541u : 0x756e6547u, 0, 0};   // "Auth", "Genu"
    c.leaves[{0x80000000, 0}] = {0x80000021, 0, 0, 0};
    if (!osxsave) c.leaves[{1, 0}].ecx &= ~bit(XEN_X86_FEATURE_OSXSAVE);
    c.leaves[{7, 0}].eax = 0;   // no subleaf 1 or 2 unless a test adds them
    return c;
}

// TCG's CPU in the launcher: qemu64,+smep,+smap,+umip (AuthenticAMD; QEMU
// target/i386/cpu.c's qemu64 feature words, as such a guest prints them).
FakeCpu qemu64()
{
    FakeCpu c;
    c.leaves[{0, 0}] = {0xd, 0x68747541u, 0x444d4163u, 0x69746e65u};
    c.leaves[{1, 0}] = {0x663, 0x800, 0x80802001, 0x078bfbfd};
    c.leaves[{7, 0}] = {0, bit(XEN_X86_FEATURE_SMEP) | bit(XEN_X86_FEATURE_SMAP), bit(XEN_X86_FEATURE_UMIP), 0};
    c.leaves[{0x80000000, 0}] = {0x80000008, 0, 0, 0};
    c.leaves[{0x80000001, 0}] = {0x663, 0, 0x00000001, 0x2193fbfd | bit(XEN_X86_FEATURE_PAGE1GB)};
    return c;
}

class PvCpuid : public ::testing::Test {
protected:
    CpuidRegs ask(FakeCpu& c, uint32_t leaf, uint32_t sub = 0)
    {
        g_cpu = &c;
        return pv_cpuid(leaf, sub, fake_cpuid);
    }
};

// The generated table against cpufeatureset.h read again, by another parser:
// both take the 'A' features of each CPUID word.
TEST(PvFeatureMask, AgreesWithCpufeaturesetH)
{
    std::ifstream in(PVMMU_XEN_CPUFEATURESET);
    ASSERT_TRUE(in) << PVMMU_XEN_CPUFEATURESET;
    // Each `XEN_CPUFEATURE(NAME, W*32+ B) /*FLAGS` line, read with sscanf
    // (GCC 12 with ASan warns inside std::regex's own code).
    std::map<unsigned, uint32_t> want;
    unsigned count = 0;
    for (std::string l; std::getline(in, l);) {
        const size_t at = l.find("XEN_CPUFEATURE(");
        if (at == std::string::npos) continue;
        unsigned w = 0, b = 0;
        int end = 0;
        if (std::sscanf(l.c_str() + at, "XEN_CPUFEATURE(%*[A-Za-z0-9_], %u*32+ %u)%n", &w, &b, &end) != 2 || !end)
            continue;
        const size_t open = l.find("/*", at + size_t(end));
        if (open == std::string::npos) continue;
        const size_t flags_end = l.find_first_of(" \t", open + 2);
        const std::string flags = l.substr(open + 2, flags_end == std::string::npos ? std::string::npos : flags_end - open - 2);
        const unsigned f = w * 32 + b;
        ++count;
        if (flags.find('A') != std::string::npos) want[f / 32] |= 1u << (f % 32);
    }
    EXPECT_EQ(count, kXenFeatureCount);
    for (const PvFeatureWord& w : kPvFeatureWords) EXPECT_EQ(w.allowed, want[w.word]) << "word " << unsigned(w.word);
    // Spot checks by name, from the header's legend: 'S' and 'H' are not PV.
    EXPECT_FALSE(pv_allowed(5) & bit(XEN_X86_FEATURE_SMEP));
    EXPECT_FALSE(pv_allowed(5) & bit(XEN_X86_FEATURE_SMAP));
    EXPECT_FALSE(pv_allowed(5) & bit(XEN_X86_FEATURE_INVPCID));
    EXPECT_FALSE(pv_allowed(6) & bit(XEN_X86_FEATURE_UMIP));
    EXPECT_FALSE(pv_allowed(6) & bit(XEN_X86_FEATURE_PKU));
    EXPECT_TRUE(pv_allowed(0) & bit(XEN_X86_FEATURE_FPU));
    EXPECT_TRUE(pv_allowed(2) & bit(XEN_X86_FEATURE_LM));
}

TEST_F(PvCpuid, Qemu64HidesSupervisorFeaturesAndSuperpages)
{
    FakeCpu c = qemu64();
    const CpuidRegs l7 = ask(c, 7);
    EXPECT_EQ(l7.ebx, 0u);   // SMEP, SMAP
    EXPECT_EQ(l7.ecx, 0u);   // UMIP
    const CpuidRegs l1 = ask(c, 1);
    EXPECT_FALSE(l1.edx & (bit(XEN_X86_FEATURE_PSE) | bit(XEN_X86_FEATURE_PGE) | bit(XEN_X86_FEATURE_MTRR) |
                           bit(XEN_X86_FEATURE_PSE36) | bit(XEN_X86_FEATURE_VME)));
    EXPECT_TRUE(l1.edx & bit(XEN_X86_FEATURE_FPU));
    EXPECT_TRUE(l1.ecx & bit(XEN_X86_FEATURE_HYPERVISOR));
    const CpuidRegs e1 = ask(c, 0x80000001);
    // AMD: the copies are leaf 1's as masked, so no PSE, PGE, MTRR, PSE36.
    EXPECT_EQ(e1.edx & kAmdLeaf1Copies, l1.edx & kAmdLeaf1Copies);
    EXPECT_FALSE(e1.edx & bit(XEN_X86_FEATURE_PAGE1GB));
    EXPECT_TRUE(e1.edx & bit(XEN_X86_FEATURE_LM));
    EXPECT_TRUE(e1.edx & bit(XEN_X86_FEATURE_SYSCALL));
    EXPECT_TRUE(e1.edx & bit(XEN_X86_FEATURE_NX));
}

TEST_F(PvCpuid, OnlyTheAllowListPasses)
{
    FakeCpu c = all_ones(false, true);
    const CpuidRegs l1 = ask(c, 1);
    // Intel: SEP stays; MCE and MCA are what pvmmu cannot back (below).
    EXPECT_EQ(l1.edx, pv_allowed(0) & ~(bit(XEN_X86_FEATURE_MCE) | bit(XEN_X86_FEATURE_MCA)));
    EXPECT_EQ(l1.ecx, pv_allowed(1) | bit(XEN_X86_FEATURE_OSXSAVE));   // HYPERVISOR is 'A'
    const CpuidRegs l7 = ask(c, 7);
    // Less what pvmmu cannot back (CannotBack* below).
    EXPECT_EQ(l7.ebx, pv_allowed(5) & ~bit(XEN_X86_FEATURE_FSGSBASE));
    EXPECT_EQ(l7.ecx, pv_allowed(6));
    EXPECT_EQ(l7.edx, pv_allowed(9) & ~(bit(XEN_X86_FEATURE_IBRSB) | bit(XEN_X86_FEATURE_STIBP) |
                                        bit(XEN_X86_FEATURE_SSBD) | bit(XEN_X86_FEATURE_ARCH_CAPS)));
    const CpuidRegs e1 = ask(c, 0x80000001);
    EXPECT_EQ(e1.edx, pv_allowed(2));   // Intel: no copies of leaf 1
    EXPECT_EQ(e1.ecx, pv_allowed(3) & ~bit(XEN_X86_FEATURE_DBEXT));
    EXPECT_EQ(ask(c, 0x80000007).edx, pv_allowed(7));
    EXPECT_EQ(ask(c, 0x80000008).ebx, pv_allowed(8) & ~bit(XEN_X86_FEATURE_IBPB));
    EXPECT_EQ(ask(c, 0xd, 1).eax, pv_allowed(4));
    // Bits cpufeatureset.h does not name: leaf 1 ECX 10, 11, 16; EDX 18, 30.
    EXPECT_EQ(l1.ecx & ((1u << 10) | (1u << 11) | (1u << 16)), 0u);
    EXPECT_EQ(l1.edx & ((1u << 18) | (1u << 30)), 0u);
}

TEST_F(PvCpuid, AmdCopiesFollowLeaf1)
{
    FakeCpu c = all_ones(true, true);
    const CpuidRegs e1 = ask(c, 0x80000001);
    // SEP's bit is SYSCALL's there; MCE and MCA hidden as in leaf 1.
    const uint32_t machine_check = bit(XEN_X86_FEATURE_MCE) | bit(XEN_X86_FEATURE_MCA);
    EXPECT_EQ(e1.edx, pv_allowed(2) | (pv_allowed(0) & kAmdLeaf1Copies & ~machine_check));
    EXPECT_FALSE(e1.edx & bit(XEN_X86_FEATURE_PSE));
    EXPECT_FALSE(e1.edx & bit(XEN_X86_FEATURE_PGE));
}

TEST_F(PvCpuid, WithoutOsxsaveXsaveAndAvxAreHidden)
{
    FakeCpu c = all_ones(false, false);
    const CpuidRegs l1 = ask(c, 1);
    EXPECT_FALSE(l1.ecx & (bit(XEN_X86_FEATURE_XSAVE) | bit(XEN_X86_FEATURE_OSXSAVE) | bit(XEN_X86_FEATURE_AVX) |
                           bit(XEN_X86_FEATURE_FMA) | bit(XEN_X86_FEATURE_F16C)));
    EXPECT_TRUE(l1.ecx & bit(XEN_X86_FEATURE_SSE4_2));
    const CpuidRegs l7 = ask(c, 7);
    EXPECT_FALSE(l7.ebx & (bit(XEN_X86_FEATURE_AVX2) | bit(XEN_X86_FEATURE_AVX512F)));
    EXPECT_TRUE(l7.ebx & bit(XEN_X86_FEATURE_BMI2));
    for (uint32_t s = 0; s < 4; ++s) {
        const CpuidRegs d = ask(c, 0xd, s);
        EXPECT_EQ(d.eax | d.ebx | d.ecx | d.edx, 0u) << "subleaf " << s;
    }
}

TEST_F(PvCpuid, XsaveComponentsOfHiddenFeaturesAreHidden)
{
    FakeCpu c = all_ones(false, true);
    for (uint32_t s = 4; s < 10; ++s) c.leaves[{0xd, s}] = {~0u, ~0u, ~0u, ~0u};
    const CpuidRegs d0 = ask(c, 0xd, 0);
    EXPECT_EQ(d0.eax, 0xe7u);   // x87, SSE, YMM, AVX-512's three; no MPX, no PKRU (9)
    EXPECT_EQ(d0.edx, 0u);      // LWP (62)
    const CpuidRegs d1 = ask(c, 0xd, 1);
    EXPECT_FALSE(d1.eax & bit(XEN_X86_FEATURE_XSAVES));
    EXPECT_EQ(d1.ecx | d1.edx, 0u);   // no supervisor state
    const CpuidRegs pkru = ask(c, 0xd, 9), avx = ask(c, 0xd, 2);
    EXPECT_EQ(pkru.eax | pkru.ebx, 0u);
    EXPECT_NE(avx.eax, 0u);
}

TEST_F(PvCpuid, LeavesOutOfRangeAndPowerAreEmpty)
{
    FakeCpu c = qemu64();
    c.leaves[{0xe, 0}] = {1, 2, 3, 4};
    c.leaves[{0x80000021, 0}] = {1, 2, 3, 4};
    c.leaves[{5, 0}] = {1, 2, 3, 4};
    for (uint32_t leaf : {0xeu, 0x80000021u, 5u, 0xc0000000u}) {
        const CpuidRegs r = ask(c, leaf);
        EXPECT_EQ(r.eax | r.ebx | r.ecx | r.edx, 0u) << std::hex << leaf;
    }
    FakeCpu a = all_ones(false, true);
    a.leaves[{7, 0}].eax = 5;
    EXPECT_EQ(ask(a, 7, 0).eax, 2u);   // the subleaves Xen has words of
    const CpuidRegs s3 = ask(a, 7, 3);
    EXPECT_EQ(s3.eax | s3.ebx | s3.ecx | s3.edx, 0u);
    EXPECT_EQ(ask(a, 0x80000007).eax, 0u);
    EXPECT_EQ(ask(a, 0x80000008).eax, 0x30ffu);   // no GuestPhysAddrSize; 48-bit linear
    EXPECT_EQ(ask(a, 0x80000008).ecx, 0u);        // Intel
    const CpuidRegs svm = ask(a, 0x8000000a);
    EXPECT_EQ(svm.eax | svm.ebx | svm.ecx | svm.edx, 0u);
}

// A CPU with basic leaves up to 0x20 and extended ones up to 0x80000021,
// every word of each filled: Xen 4.17's PV policy stops at 0xD and at
// 0x80000008 (Intel) or 0x80000021 (AMD), and empties the leaves it does
// not describe (docs/abi.md §10 "Emulation").
FakeCpu all_leaves(bool amd)
{
    FakeCpu c = all_ones(amd, true);
    for (uint32_t l = 0xe; l <= 0x20; ++l)
        for (uint32_t s = 0; s < 4; ++s) c.leaves[{l, s}] = {~0u, ~0u, ~0u, ~0u};
    c.leaves[{0, 0}].eax = 0x20;
    return c;
}

bool empty(const CpuidRegs& r) { return (r.eax | r.ebx | r.ecx | r.edx) == 0; }

void expect_basic_range(const std::function<CpuidRegs(uint32_t, uint32_t)>& ask)
{
    EXPECT_EQ(ask(0, 0).eax, 0xdu);
    for (uint32_t l = 0xe; l <= 0x20; ++l)
        for (uint32_t s = 0; s < 2; ++s) EXPECT_TRUE(empty(ask(l, s))) << std::hex << l << "." << s;
    // 3 serial number, 8, 9 DCA, 0xA PMU, 0xB topology, 0xC.
    for (uint32_t l : {3u, 8u, 9u, 0xau, 0xbu, 0xcu})
        for (uint32_t s = 0; s < 2; ++s) EXPECT_TRUE(empty(ask(l, s))) << std::hex << l << "." << s;
    EXPECT_FALSE(empty(ask(2, 0)));   // cache descriptors, as Xen
    EXPECT_FALSE(empty(ask(4, 0)));
    EXPECT_EQ(ask(1, 0).ebx >> 24, 0u);   // no host APIC ID
    EXPECT_EQ(ask(1, 0).ebx, 0x00ffffffu);
}

TEST_F(PvCpuid, LeafRangeIsXensOnIntel)
{
    FakeCpu c = all_leaves(false);
    expect_basic_range([&](uint32_t l, uint32_t s) { return ask(c, l, s); });
    const CpuidRegs e0 = ask(c, 0x80000000);
    EXPECT_EQ(e0.eax, 0x80000008u);
    for (uint32_t l = 0x80000009; l <= 0x80000021; ++l) EXPECT_TRUE(empty(ask(c, l))) << std::hex << l;
    EXPECT_FALSE(empty(ask(c, 0x80000002)));   // the brand string
    // A CPU below the cap keeps its own highest leaves.
    c.leaves[{0, 0}].eax = 7;
    c.leaves[{0x80000000, 0}].eax = 0x80000004;
    EXPECT_EQ(ask(c, 0).eax, 7u);
    EXPECT_EQ(ask(c, 0x80000000).eax, 0x80000004u);
    EXPECT_TRUE(empty(ask(c, 0xd)));
    EXPECT_TRUE(empty(ask(c, 0x80000008)));
}

TEST_F(PvCpuid, LeafRangeIsXensOnAmd)
{
    FakeCpu c = all_leaves(true);
    expect_basic_range([&](uint32_t l, uint32_t s) { return ask(c, l, s); });
    c.leaves[{0x80000000, 0}].ebx = 0x68747541u;   // "Auth": AMD repeats the vendor there
    EXPECT_EQ(ask(c, 0x80000000).eax, 0x80000021u);
    EXPECT_EQ(ask(c, 0x80000000).ebx, 0x68747541u);
    // IBS, LWP, cache and core topology, SEV, platform QoS.
    for (uint32_t l = 0x8000001b; l <= 0x80000020; ++l) EXPECT_TRUE(empty(ask(c, l))) << std::hex << l;
    EXPECT_FALSE(empty(ask(c, 0x80000021)));   // feature word 11
    c.leaves[{0x80000000, 0}].eax = 0x80000022;
    EXPECT_EQ(ask(c, 0x80000000).eax, 0x80000021u);
    c.leaves[{0x80000022, 0}] = {~0u, ~0u, ~0u, ~0u};
    EXPECT_TRUE(empty(ask(c, 0x80000022)));
}

// 'A' features whose instructions or MSRs pvmmu does not provide: a kernel
// told FSGSBASE runs RDFSBASE (#UD, CR4.FSGSBASE clear); one told of
// IA32_SPEC_CTRL, IA32_PRED_CMD or IA32_ARCH_CAPABILITIES reads or writes
// them (#GP from pv/emulate.cc's read_msr/write_msr). Each on a CPU
// that has it, the other bits of its word kept.
TEST_F(PvCpuid, CannotBackFsgsbase)
{
    FakeCpu c = all_ones(false, true);
    EXPECT_FALSE(ask(c, 7).ebx & bit(XEN_X86_FEATURE_FSGSBASE));
    EXPECT_TRUE(ask(c, 7).ebx & bit(XEN_X86_FEATURE_BMI1));
}

TEST_F(PvCpuid, CannotBackSpecCtrlMsrs)
{
    FakeCpu c = all_ones(false, true);
    c.leaves[{7, 0}].eax = 2;
    const CpuidRegs l7 = ask(c, 7);
    EXPECT_FALSE(l7.edx & bit(XEN_X86_FEATURE_IBRSB));       // IA32_SPEC_CTRL, IA32_PRED_CMD
    EXPECT_FALSE(l7.edx & bit(XEN_X86_FEATURE_STIBP));       // IA32_SPEC_CTRL
    EXPECT_FALSE(l7.edx & bit(XEN_X86_FEATURE_SSBD));        // IA32_SPEC_CTRL
    EXPECT_FALSE(l7.edx & bit(XEN_X86_FEATURE_ARCH_CAPS));   // IA32_ARCH_CAPABILITIES
    EXPECT_TRUE(l7.edx & bit(XEN_X86_FEATURE_MD_CLEAR));     // VERW: an instruction
    EXPECT_FALSE(ask(c, 7, 2).edx & bit(XEN_X86_FEATURE_INTEL_PSFD));   // IA32_SPEC_CTRL
    EXPECT_FALSE(ask(c, 0x80000008).ebx & bit(XEN_X86_FEATURE_IBPB));   // IA32_PRED_CMD
    EXPECT_TRUE(ask(c, 0x80000008).ebx & bit(XEN_X86_FEATURE_CLZERO));
    FakeCpu a = all_ones(true, true);
    EXPECT_FALSE(ask(a, 0x80000021).eax & bit(XEN_X86_FEATURE_SBPB));   // IA32_PRED_CMD bit 7
    EXPECT_TRUE(ask(a, 0x80000021).eax & bit(XEN_X86_FEATURE_LFENCE_DISPATCH));
}

TEST_F(PvCpuid, CannotBackMachineCheck)
{
    FakeCpu c = all_ones(false, true);
    const CpuidRegs l1 = ask(c, 1);
    EXPECT_FALSE(l1.edx & bit(XEN_X86_FEATURE_MCE));   // IA32_MCG_STATUS 0x17a
    EXPECT_FALSE(l1.edx & bit(XEN_X86_FEATURE_MCA));   // IA32_MCG_CAP 0x179, the banks
    EXPECT_TRUE(l1.edx & bit(XEN_X86_FEATURE_FPU));
    FakeCpu a = all_ones(true, true);
    EXPECT_FALSE(ask(a, 0x80000001).edx & bit(XEN_X86_FEATURE_MCE));   // AMD's copy of leaf 1
}

TEST_F(PvCpuid, CannotBackDrAddressMasks)
{
    FakeCpu a = all_ones(true, true);
    EXPECT_FALSE(ask(a, 0x80000001).ecx & bit(XEN_X86_FEATURE_DBEXT));   // MSRs 0xC0011019-1B, 0xC0011027
    EXPECT_TRUE(ask(a, 0x80000001).ecx & bit(XEN_X86_FEATURE_LAHF_LM));
}

// -cpu max under TCG: 57-bit linear addresses, which a PV guest's 4-level
// page tables do not have; Xen answers 48.
TEST_F(PvCpuid, LinearAddressesOfFourLevels)
{
    FakeCpu c = qemu64();
    c.leaves[{0x80000008, 0}] = {0x00303928, 0, 0x1001, 0};
    EXPECT_EQ(ask(c, 0x80000008).eax, 0x3028u);
    c.leaves[{0x80000008, 0}] = {0x2e24, 0, 0, 0};
    EXPECT_EQ(ask(c, 0x80000008).eax, 0x2e24u);
}

// Xen hides SEP from PV guests on AMD, where SYSENTER #UDs in long mode
// (compared on Xen 4.17 under TCG's qemu64, docs/abi.md §12.2).
TEST_F(PvCpuid, SysenterHiddenOnAmdOnly)
{
    FakeCpu amd = all_ones(true, true), intel = all_ones(false, true);
    EXPECT_FALSE(ask(amd, 1).edx & bit(XEN_X86_FEATURE_SEP));
    EXPECT_TRUE(ask(intel, 1).edx & bit(XEN_X86_FEATURE_SEP));
}

} // namespace
} // namespace pvmmu::x86
