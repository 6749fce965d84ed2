// Xen 4.17's default PV CPUID policy for the processor's leaves
// (pv/cpuid.h, docs/abi.md §12.2). Xen's policy is an allow-list: a
// feature reaches a PV guest only where cpufeatureset.h marks it 'A'; bits
// the header does not name (reserved today, features of tomorrow) never do.
#include <xen/arch-x86/cpufeatureset.h>

#include "pv/cpuid.h"

namespace pvmmu::x86 {

namespace {

// A feature's word and bit (cpufeatureset.h numbers them word * 32 + bit).
constexpr unsigned word_of(unsigned f) { return f / 32; }
constexpr uint32_t bit(unsigned f) { return 1u << (f % 32); }

// The features that need state enabled in XCR0 (Intel SDM vol. 1 §13.3:
// VEX- and EVEX-encoded instructions #UD unless XCR0 enables the state they
// use; PKRU, MPX's bounds and LWP are XSAVE components). pvmmu neither sets
// CR4.OSXSAVE for itself nor emulates XSETBV for a guest, so where its own
// CR4.OSXSAVE is clear these are hidden with XSAVE (Xen's PV policy derives
// them from XSAVE the same way: gen-cpuid's dependency tree).
constexpr unsigned kNeedXcr0[] = {
    XEN_X86_FEATURE_XSAVE, XEN_X86_FEATURE_AVX, XEN_X86_FEATURE_FMA, XEN_X86_FEATURE_F16C,
    XEN_X86_FEATURE_XOP, XEN_X86_FEATURE_FMA4, XEN_X86_FEATURE_LWP,
    XEN_X86_FEATURE_AVX2, XEN_X86_FEATURE_MPX, XEN_X86_FEATURE_AVX512F, XEN_X86_FEATURE_AVX512DQ,
    XEN_X86_FEATURE_AVX512_IFMA, XEN_X86_FEATURE_AVX512PF, XEN_X86_FEATURE_AVX512ER, XEN_X86_FEATURE_AVX512CD,
    XEN_X86_FEATURE_AVX512BW, XEN_X86_FEATURE_AVX512VL,
    XEN_X86_FEATURE_AVX512_VBMI, XEN_X86_FEATURE_PKU, XEN_X86_FEATURE_AVX512_VBMI2, XEN_X86_FEATURE_VAES,
    XEN_X86_FEATURE_VPCLMULQDQ, XEN_X86_FEATURE_AVX512_VNNI, XEN_X86_FEATURE_AVX512_BITALG,
    XEN_X86_FEATURE_AVX512_VPOPCNTDQ,
    XEN_X86_FEATURE_AVX512_4VNNIW, XEN_X86_FEATURE_AVX512_4FMAPS, XEN_X86_FEATURE_AVX512_VP2INTERSECT,
    XEN_X86_FEATURE_AVX512_FP16,
    XEN_X86_FEATURE_AVX_VNNI, XEN_X86_FEATURE_AVX512_BF16,
};

// 'A' features pvmmu cannot back, hidden always (a difference from Xen,
// docs/abi.md §11, §12.2), kept by hand:
// - FSGSBASE: the instructions #UD unless CR4.FSGSBASE is set (SDM vol. 2,
//   RDFSBASE), which pvmmu keeps clear for itself (cpu/cpu_features.cc: ring 3
//   could pick any %gs base) and which mov-to-CR4 ignores; Linux 5.9+
//   would take the bit as leave to use them.
// - IBRSB, STIBP, SSBD, INTEL_PSFD (IA32_SPEC_CTRL 0x48, SDM vol. 4 §2.1),
//   IBPB and SBPB (IA32_PRED_CMD 0x49; AMD's IBPB is its bit 0 and SBPB
//   its bit 7, APM vol. 2 §3.2.9), ARCH_CAPS (IA32_ARCH_CAPABILITIES
//   0x10a), DBEXT (AMD's DR0-3 address masks, MSRs 0xC0011027 and
//   0xC0011019-0xC001101B, APM vol. 2 §13.1.1.5): each names an MSR that
//   pv/emulate.cc's read_msr/write_msr answer with #GP, where Xen
//   emulates them for PV.
// - MCE, MCA: Xen gives a PV guest a virtual machine-check architecture
//   (IA32_MCG_CAP 0x179, IA32_MCG_STATUS 0x17a, the MCi banks; SDM vol. 3
//   §16.3); pvmmu has none, and Linux told of MCA reads IA32_MCG_STATUS at
//   boot and panics on the #GP ("MCA architectural violation").
constexpr unsigned kCannotBack[] = {
    XEN_X86_FEATURE_FSGSBASE, XEN_X86_FEATURE_MCE, XEN_X86_FEATURE_MCA,
    XEN_X86_FEATURE_IBRSB, XEN_X86_FEATURE_STIBP, XEN_X86_FEATURE_SSBD, XEN_X86_FEATURE_INTEL_PSFD,
    XEN_X86_FEATURE_IBPB, XEN_X86_FEATURE_SBPB, XEN_X86_FEATURE_ARCH_CAPS, XEN_X86_FEATURE_DBEXT,
};

template <unsigned N>
constexpr uint32_t mask_of(const unsigned (&features)[N], unsigned word)
{
    uint32_t m = 0;
    for (unsigned f : features)
        if (word_of(f) == word) m |= bit(f);
    return m;
}

constexpr uint32_t need_xcr0(unsigned word) { return mask_of(kNeedXcr0, word); }
constexpr uint32_t cannot_back(unsigned word) { return mask_of(kCannotBack, word); }

constexpr uint32_t allowed(unsigned word)
{
    for (const PvFeatureWord& w : kPvFeatureWords)
        if (w.word == word) return w.allowed;
    return 0;
}

// Hardware facts the policy relies on, checked against the generated table.
static_assert(word_of(XEN_X86_FEATURE_FPU) == 0 && word_of(XEN_X86_FEATURE_SSE3) == 1 &&
              word_of(XEN_X86_FEATURE_SYSCALL) == 2 && word_of(XEN_X86_FEATURE_XSAVEOPT) == 4 &&
              word_of(XEN_X86_FEATURE_SMEP) == 5);
static_assert(kPvFeatureWords[0].leaf == 1 && kPvFeatureWords[0].reg == 3);
static_assert(!(allowed(word_of(XEN_X86_FEATURE_SMEP)) & bit(XEN_X86_FEATURE_SMEP)));
static_assert(allowed(word_of(XEN_X86_FEATURE_FPU)) & bit(XEN_X86_FEATURE_FPU));

uint32_t& reg(CpuidRegs& r, unsigned i)
{
    uint32_t* const regs[4] = {&r.eax, &r.ebx, &r.ecx, &r.edx};
    return *regs[i & 3];
}

// The vendor, for 0x80000001's copies of leaf 1: AMD's and Hygon's CPUs
// ("AuthenticAMD", "HygonGenuine"; leaf 0 EBX holds the first four letters).
bool amd_like(RawCpuid raw)
{
    const uint32_t b = raw(0, 0).ebx;
    return b == 0x68747541u /* "Auth" */ || b == 0x6f677948u /* "Hygo" */;
}

// Every feature word of (leaf, sub) reduced to its allow-list.
void apply_allow_list(uint32_t leaf, uint32_t sub, CpuidRegs& r, bool xcr0)
{
    for (const PvFeatureWord& w : kPvFeatureWords) {
        if (w.leaf != leaf || (w.sub >= 0 && uint32_t(w.sub) != sub)) continue;
        reg(r, w.reg) &= w.allowed & ~cannot_back(w.word) & ~(xcr0 ? 0u : need_xcr0(w.word));
    }
}

// Leaf 0xD when XSAVE stays: the components of features a PV guest keeps
// (x87 and SSE always, AVX's YMM, AVX-512's three); no supervisor state
// (XSAVES is not 'A').
CpuidRegs xsave_leaf(uint32_t sub, CpuidRegs r, RawCpuid raw)
{
    const CpuidRegs l1 = raw(1, 0), l7 = raw(7, 0);
    uint64_t xcr0 = 0x3;
    // Whether the policy keeps AVX and AVX-512F at all (constants: clang
    // refuses a constant operand of &&).
    constexpr bool kAvx = (allowed(1) & bit(XEN_X86_FEATURE_AVX)) != 0;
    constexpr bool kAvx512 = (allowed(5) & bit(XEN_X86_FEATURE_AVX512F)) != 0;
    if (kAvx && (l1.ecx & bit(XEN_X86_FEATURE_AVX))) xcr0 |= 0x4;
    if (kAvx512 && (l7.ebx & bit(XEN_X86_FEATURE_AVX512F))) xcr0 |= 0xe0;
    if (sub == 0) {
        r.eax &= uint32_t(xcr0);
        r.edx &= uint32_t(xcr0 >> 32);
    } else if (sub == 1) {
        r.ebx = r.ecx = r.edx = 0;
    } else if (sub >= 64 || !((xcr0 >> sub) & 1)) {
        r = {0, 0, 0, 0};
    }
    return r;
}

// The highest leaf of Xen 4.17's PV policy in the range from `base`: basic
// leaves up to 0xD (XSAVE), extended ones up to 0x80000008 on Intel and
// 0x80000021 on AMD and Hygon, or the CPU's highest where it is lower.
uint32_t max_leaf(uint32_t base, RawCpuid raw)
{
    const uint32_t cap = base ? (amd_like(raw) ? 0x80000021u : 0x80000008u) : 0xdu;
    const uint32_t host = raw(base, 0).eax;
    return host < cap ? host : cap;
}

} // namespace

uint32_t pv_allowed(unsigned word) { return allowed(word); }

CpuidRegs pv_cpuid(uint32_t leaf, uint32_t sub, RawCpuid raw)
{
    // Beyond the highest leaf of its range the CPU answers another leaf's
    // words (Intel: the highest basic one); Xen answers zeros.
    const uint32_t base = leaf & 0x80000000u;
    if (leaf > max_leaf(base, raw)) return {0, 0, 0, 0};
    const bool xcr0 = raw(1, 0).ecx & bit(XEN_X86_FEATURE_OSXSAVE);
    CpuidRegs r = raw(leaf, sub);
    switch (leaf) {
    case 0: case 0x80000000:   // the vendor, and the highest leaf Xen describes
        r.eax = max_leaf(base, raw);
        return r;
    case 1:
        // EBX 31:24, the initial APIC ID: the host CPU's; Xen 4.17 gives a
        // PV vCPU 0 there (only an HVM one gets an ID of its own).
        r.ebx &= 0x00ffffffu;
        apply_allow_list(leaf, sub, r, xcr0);
        // SYSENTER is #UD in long mode on AMD (APM vol. 2 §6.1.1); Xen
        // drops SEP from an AMD host's features, so its PV guests lack it.
        if (amd_like(raw)) r.edx &= ~bit(XEN_X86_FEATURE_SEP);
        // Running under a hypervisor; OSXSAVE ('!': Xen's own CR4 leaks into
        // a PV kernel's emulated CPUID) where XSAVE stays.
        r.ecx |= bit(XEN_X86_FEATURE_HYPERVISOR);
        if (xcr0) r.ecx |= bit(XEN_X86_FEATURE_OSXSAVE);
        return r;
    case 5: case 6:   // MONITOR/MWAIT and power management: the hypervisor's
        return {0, 0, 0, 0};
    // Leaves Xen's policy does not describe (Intel SDM vol. 2, CPUID): 3
    // (serial number), 8, 9 (DCA), 0xA (PMU: no vPMU by default), 0xB (the
    // host's x2APIC topology), 0xC.
    case 3: case 8: case 9: case 0xa: case 0xb: case 0xc:
        return {0, 0, 0, 0};
    case 7:
        if (sub > 2) return {0, 0, 0, 0};
        if (sub == 0 && r.eax > 2) r.eax = 2;   // the subleaves cpufeatureset.h has words of
        if (sub == 2) r.eax = r.ebx = r.ecx = 0;
        break;
    case 0xd:
        if (!xcr0) return {0, 0, 0, 0};
        r = xsave_leaf(sub, r, raw);
        break;
    case 0x80000001: {
        const uint32_t copies = amd_like(raw) ? pv_cpuid(1, 0, raw).edx & kAmdLeaf1Copies : 0;
        apply_allow_list(leaf, sub, r, xcr0);
        r.edx = (r.edx & ~kAmdLeaf1Copies) | copies;
        return r;
    }
    case 0x8000000a:   // SVM: none for a PV guest
        return {0, 0, 0, 0};
    // AMD's leaves Xen does not describe (APM vol. 3, Appendix E): IBS
    // (0x8000001B), LWP (1C), cache and core topology (1D, 1E), SEV (1F),
    // platform QoS (20).
    case 0x8000001b: case 0x8000001c: case 0x8000001d: case 0x8000001e: case 0x8000001f: case 0x80000020:
        return {0, 0, 0, 0};
    case 0x80000007:   // power and RAS: only the feature word (EDX)
        r.eax = r.ebx = r.ecx = 0;
        break;
    case 0x80000008:
        // Address sizes but the guest's physical one (23:16), linear ones of
        // 4-level paging (15:8: no LA57 for a PV guest, whose page tables
        // have four levels); no core topology on Intel.
        r.eax &= 0xffffu;
        if ((r.eax >> 8 & 0xff) > 48) r.eax = (r.eax & ~0xff00u) | (48u << 8);
        r.ecx = amd_like(raw) ? r.ecx & 0x0003f0ffu : 0;
        r.edx = 0;
        break;
    default: break;
    }
    apply_allow_list(leaf, sub, r, xcr0);
    return r;
}

} // namespace pvmmu::x86
