// SMEP, SMAP, UMIP, NX and WP: found, turned on, printed and checked; see
// cpu/cpu_features.h.
#include "cpu/cpu_features.h"

#include "cpu/cpu_bits.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/paging.h"

extern "C" {
uint8_t hv_smap = 0;
}

namespace pvmmu::x86 {

namespace {

const char* state(bool has, bool on) { return !has ? "absent" : on ? "on" : "off"; }

} // namespace

CpuFeatures cpu_features()
{
    CpuFeatures f;
    f.de = cpuid(1).edx & CPUID_1_EDX_DE;
    if (cpuid(0).eax < 7) return f;   // no leaf 7: none of the rest
    const CpuidRegs r = cpuid(7, 0);
    f.smep = r.ebx & CPUID_7_EBX_SMEP;
    f.smap = r.ebx & CPUID_7_EBX_SMAP;
    f.umip = r.ecx & CPUID_7_ECX_UMIP;
    f.rtm = r.ebx & CPUID_7_EBX_RTM;
    f.bld = r.ecx & CPUID_7_ECX_BUS_LOCK_DETECT;
    return f;
}

namespace {
CpuFeatures g_boot_cpu;   // written by the boot CPU before any other CPU starts
} // namespace

const CpuFeatures& boot_cpu_features() { return g_boot_cpu; }

void cpu_features_enable()
{
    const CpuFeatures f = cpu_features();
    uint64_t cr4 = read_cr4();
    if (f.smep) cr4 |= CR4_SMEP;
    if (f.smap) cr4 |= CR4_SMAP;
    if (f.umip) cr4 |= CR4_UMIP;
    // Whatever the loader left: with FSGSBASE a guest in ring 3 could load
    // any %gs base (a PerCpu area's, the hypervisor's slots), past
    // set_segment_base's checks (docs/security.md "Segment bases").
    cr4 &= ~uint64_t(CR4_FSGSBASE);
    // The FPU and SSE as an x86-64 OS runs them, which a PV kernel and its
    // processes inherit (they cannot write CR0 or CR4): SSE and FXSAVE of
    // the XMM state (x86-64 CPUs all have FXSR and SSE2), #XM for SIMD and
    // #MF for x87 errors, and WAIT under TS is #NM. Xen sets the same bits.
    cr4 |= CR4_OSFXSR | CR4_OSXMMEXCPT;
    write_cr4(cr4);
    write_cr0(read_cr0() | CR0_MP | CR0_NE);
    // The first CPU to get here is the boot CPU: it alone wins the exchange,
    // however the APs are started.
    static uint8_t taken;
    if (__atomic_exchange_n(&taken, uint8_t(1), __ATOMIC_ACQ_REL) == 0) g_boot_cpu = f;
    if (f.smap) __atomic_store_n(&hv_smap, uint8_t(1), __ATOMIC_RELEASE);
}

void cpu_features_print()
{
    const CpuFeatures f = cpu_features();
    const uint64_t cr4 = read_cr4();
    printk("cpu features: smep=%s smap=%s umip=%s nx=%s wp=%s\n", state(f.smep, cr4 & CR4_SMEP),
           state(f.smap, cr4 & CR4_SMAP), state(f.umip, cr4 & CR4_UMIP),
           state(true, rdmsr(MSR_EFER) & EFER_NXE), state(true, read_cr0() & CR0_WP));
}

const char* cpu_features_missing(uint64_t cr0, uint64_t cr4, uint64_t efer)
{
    const CpuFeatures f = cpu_features();
    if (!(cr0 & CR0_WP)) return "CR0.WP clear: ring 0 could write read-only pages";
    if (!(efer & EFER_NXE)) return "EFER.NXE clear: NX not honoured";
    if (f.smep && !(cr4 & CR4_SMEP)) return "CR4.SMEP clear on a CPU with SMEP";
    if (f.smap && !(cr4 & CR4_SMAP)) return "CR4.SMAP clear on a CPU with SMAP";
    if (f.umip && !(cr4 & CR4_UMIP)) return "CR4.UMIP clear on a CPU with UMIP";
    if (cr4 & CR4_FSGSBASE) return "CR4.FSGSBASE set: ring 3 could choose any %gs base";
    return nullptr;
}

bool smap_selftest(uint64_t guest_cr3, uint64_t guest_va)
{
    if (!hv_smap) {
        printk("selftest: smap: this CPU has no SMAP (CPUID.(EAX=07H):EBX[20] clear): nothing to show\n");
        return false;
    }
    write_cr3(guest_cr3);
    const bool closed_faulted = guest_probe_read(reinterpret_cast<const void*>(guest_va), false) != 0;
    const uint64_t cr2 = read_cr2();
    const bool open_read = guest_probe_read(reinterpret_cast<const void*>(guest_va), true) == 0;
    write_cr3(hv_root().v);
    printk("selftest: smap: guest address 0x%lx: without STAC the read %s", guest_va,
           closed_faulted ? "faulted" : "WORKED");
    if (closed_faulted) printk(" (#PF, cr2 0x%lx)", cr2);
    printk("; with STAC it %s\n", open_read ? "read" : "FAULTED");
    return closed_faulted && cr2 == guest_va && open_read;
}

} // namespace pvmmu::x86
