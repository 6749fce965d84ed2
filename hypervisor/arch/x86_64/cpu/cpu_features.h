// The CPU's protection features: what CPUID says the CPU has, and
// turning it on in each CPU's CR4 as the CPU starts.
//
// NX (EFER.NXE) and CR0.WP are on from the first instruction in long mode
// (boot/boot32.S refuses a CPU without NX; boot/trampoline.S sets both on the APs).
// SMEP, SMAP and UMIP are turned on here where CPUID has them:
//  - SMEP: ring 0 never executes a user page, so a jump into guest memory
//    faults instead of running the guest's code;
//  - SMAP: ring 0 never reads or writes a user page unless EFLAGS.AC is set.
//    A PV guest kernel runs in ring 3, so all of a guest's memory is user
//    pages; guest_copy (mm/guest_copy.S) is the one place that sets AC (STAC)
//    and it clears it (CLAC) before it returns. Every entry to the hypervisor
//    clears AC too (cpu/trap_entry.S): an interrupt or exception keeps the
//    interrupted code's AC, which a guest may have set in ring 3 (SYSCALL
//    clears it through IA32_FMASK, cpu/entry_defs.h);
//  - UMIP: SGDT, SIDT, SLDT, SMSW and STR raise #GP outside ring 0, so a
//    guest cannot read where the hypervisor's descriptor tables are.
#pragma once

#include <stdint.h>

namespace pvmmu::x86 {

struct CpuFeatures {
    bool smep = false, smap = false, umip = false;
    bool de = false, rtm = false, bld = false;   // what a guest's CR4.DE and DR6/DR7 rules depend on (pv/dr.h)
};

// What CPUID reports on the calling CPU (leaf 7, where the CPU has it).
CpuFeatures cpu_features();

// The boot CPU's, read once by cpu_features_enable (no CPUID, which exits
// under KVM, on a guest's every MOV to a debug register or to CR4).
const CpuFeatures& boot_cpu_features();

// Sets CR4.SMEP, SMAP and UMIP on the calling CPU where CPUID has them. On
// every CPU from percpu_load, before its CR4 is recorded (cpu_online) and
// long before any guest runs. The CPUs are assumed to be alike, as on every
// machine pvmmu boots: the boot CPU's SMAP decides hv_smap for all.
void cpu_features_enable();

// One console line, "cpu features: smep=on smap=on umip=on nx=on wp=on", for
// the calling CPU: "on", "off" (the CPU has it and it is off: an invariant
// violation, mm/hv_invariants.cc) or "absent" (CPUID lacks it).
void cpu_features_print();

// The reason a CPU's recorded CR0/CR4/EFER break the rule "every feature the
// CPU has is on", or nullptr.
const char* cpu_features_missing(uint64_t cr0, uint64_t cr4, uint64_t efer);

// Boot self-test (cmdline "selftest=smap"): with the guest's page tables
// loaded, reads the byte at `guest_va` (a present user page of the guest)
// once without STAC, which must fault under SMAP, then with STAC, which must
// work. Prints what happened; false if SMAP did not hold.
bool smap_selftest(uint64_t guest_cr3, uint64_t guest_va);

} // namespace pvmmu::x86

// 1 where the boot CPU turned CR4.SMAP on: the entry code and guest_copy run
// STAC and CLAC only then (both are #UD on a CPU without SMAP).
extern "C" uint8_t hv_smap;
