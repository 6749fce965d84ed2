// The boot CPU's path from boot/boot32.S to a booted machine, in order (see
// docs/boot.md): console, traps, memory map, page tables, its own per-CPU
// area, local APIC, the other CPUs (ACPI), the core's frame table, SMP
// start-up, dropping the identity map, then the checks the QEMU test reads.
// Each step prints one line or a few, so a hang shows where it happened.
#include "boot/acpi.h"
#include "boot/boot_alloc.h"
#include "boot/exit.h"
#include "boot/multiboot.h"
#include "boot/selftest.h"
#include "boot/smp.h"
#include "boot/time.h"
#include "cpu/cpu_features.h"
#include "cpu/lapic.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/shootdown.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/hv_invariants.h"
#include "mm/native_window.h"
#include "mm/paging.h"
#include "pv/domain.h"
#include "pv/grants.h"
#include "pv/loader.h"
#include "pv/run.h"
#include "pv/vcpu_op.h"
#include "core/range.h"

extern "C" void switch_stack(uint64_t top, void (*fn)());

namespace pvmmu::x86 {

namespace {

// Every member of these types needs an initializer: GCC 12 accepts constinit
// on an object with one indeterminate member (a plain `char buf[256];`) and
// then puts the whole object in .bss, dropping every other initializer — a
// domain's Policy lost its MapForeign denial that way once.
constinit BootInfo g_boot;
constinit CpuList g_found;
constinit GuestDomain g_guests[BootInfo::kMaxModules];

// Builds a per-CPU area for every enabled CPU the MADT lists. The boot CPU,
// whose APIC ID is `bsp_apic`, is CPU 0 whatever its place in the table.
void find_cpus(uint32_t bsp_apic)
{
    const int found = acpi_find_cpus(g_found);
    exit_find_power(g_found.rsdp);   // also the ends of the machine (boot/exit.h)
    if (found != 0) {
        printk("acpi: no MADT found; running on the boot CPU only\n");
        g_nr_cpus = 1;
        return;
    }
    printk("acpi: RSDP at 0x%lx, MADT: local APIC at 0x%lx, %u CPUs enabled", g_found.rsdp,
           g_found.lapic_phys, g_found.count);
    if (g_found.ignored) printk(" (%u more ignored)", g_found.ignored);
    printk("\n");
    g_nr_cpus = 1;
    for (unsigned i = 0; i < g_found.count && g_nr_cpus < kMaxCpus; ++i)
        if (g_found.apic_ids[i] != bsp_apic) percpu_area_build(g_nr_cpus++, g_found.apic_ids[i]);
}

void report_invariants()
{
    HvMapStats s;
    if (!hv_check_invariants(s)) {
        printk("invariants: FAILED (%lu violations)\n", s.violations);
        hv_exit(HV_EXIT_FAILURE);
    }
    printk("invariants: ok (%lu tables; %lu 4K pages: %lu RX, %lu R, %lu RW; %lu 2M pages; "
           "no user page, no W+X page, nothing outside slots %u/%u/%u; WP, NXE and the CPU's SMEP, SMAP, "
           "UMIP on %lu CPUs)\n",
           s.tables, s.pages_4k, s.exec, s.read_only, s.writable, s.pages_2m, HV_SLOT_PERCPU,
           HV_SLOT_IMAGE, HV_SLOT_DIRECTMAP, s.cpus);
}

// The linked core at work on this machine when there is no guest: a domain
// built and validated by it, then the core's invariants.
void report_core()
{
    DomainLayout d;
    if (int rc = core_build_test_domain(256, d)) {
        printk("core: FAILED: building a test domain: error %d\n", rc);
        hv_exit(HV_EXIT_FAILURE);
    }
    printk("core: domain 1 built by the core: %lu frames from mfn 0x%lx, L4 mfn 0x%lx validated "
           "and pinned\n", d.nr_frames, d.first.v, d.l4.v);
    report_core_invariants();
}

[[noreturn]] void boot_failed(unsigned dom, const char* why, uint64_t value)
{
    printk("pvmmu: FAILED: domain %u: %s (%lu)\n", dom, why, value);
    hv_exit(HV_EXIT_FAILURE);
}

// "key=N" for domain `dom` in a command line: true and `value` set if there;
// false, `value` unchanged, if not; a value that is no number ends the boot.
bool domain_uint(unsigned dom, const char* cmdline, const char* key, uint64_t& value)
{
    switch (cmdline_uint(cmdline, key, value)) {
    case CmdlineUint::Ok: return true;
    case CmdlineUint::Absent: return false;
    case CmdlineUint::Malformed: break;
    }
    printk("pvmmu: FAILED: domain %u: %s= takes a decimal or 0x-hex number\n", dom, key);
    hv_exit(HV_EXIT_FAILURE);
}

// The words of a module string that shape what its domain may do, applied
// before it starts (docs/abi.md §10 "Policy and peer"): "invariant-check"
// lets it run PVMMUOP_check_invariants; "deny=BITS" denies
// the PVMMU_DENY_* commands; "peer=N" builds an idle domain of N frames right
// after it, never run and never counted running, whose frames the domain may
// learn (PVMMUOP_facts) to name in requests that must be refused. The peer
// takes the next domain id and a CPU of its own after the domain's (next_cpu,
// advanced past it; the runner gives QEMU one CPU more for it).
void apply_module_words(const char* cmdline, unsigned& nr, CpuId& next_cpu, unsigned cpus_online)
{
    GuestDomain& g = g_guests[nr];
    uint64_t deny = 0, peer = 0;
    if (domain_uint(nr + 1, cmdline, "deny", deny) && !g.dom.policy.deny_abi(deny))
        boot_failed(nr + 1, "deny= names unknown commands", deny);
    // The words after the kernel's name only, as for unsafe-native-pt.
    const char* words = cmdline;
    while (*words && *words != ' ') ++words;
    if (cmdline_word(words, "invariant-check")) {
        // Page tables written without hypercalls would race the check.
        if (cmdline_word(words, "unsafe-native-pt"))
            boot_failed(nr + 1, "invariant-check with unsafe-native-pt: words", 2);
        g.invariant_check = true;
        quiesce_enable();
        printk("domain %u: invariant-check: TEST FACILITY: this domain may pause every CPU's hypercalls for the "
               "whole-machine check and learns machine-wide counts; trust it as the machine's owner\n", nr + 1);
    }
    if (!domain_uint(nr + 1, cmdline, "peer", peer)) return;
    if (nr + 1 >= BootInfo::kMaxModules || next_cpu >= cpus_online)
        boot_failed(nr + 1, "no room (a domain slot and a CPU) for a peer domain", peer);
    GuestDomain& p = g_guests[++nr];
    if (int rc = core_build_idle_domain(DomId(nr + 1), peer, next_cpu, p.dom, p.layout))
        boot_failed(nr + 1, "the peer domain was not built, error", uint64_t(-rc));
    ++next_cpu;
    g.peer = &p;
    printk("domain %u: peer of domain %u: %lu frames from mfn 0x%lx, idle\n", nr + 1, nr, p.layout.nr_frames,
           p.layout.first.v);
}

// The words of a module's string after its path (its first word).
const char* module_words(const BootInfo::Module& m)
{
    const char* w = m.cmdline;
    while (*w && *w != ' ') ++w;
    return w;
}

// A module whose words include "ramdisk" is not a kernel: it is the initial
// module (start_info's mod_start/mod_len) of the domain of the kernel module
// right before it, as xl.cfg's `ramdisk =` (pvmmu-run passes it so).
bool ramdisk_module(const BootInfo::Module& m) { return cmdline_word(module_words(m), "ramdisk"); }

// Each boot module is a guest kernel and becomes a domain, with the ramdisk
// module after it if there is one: module i is domain
// i + 1 (or later, after peers and ramdisks) with "frames=N" frames (default HV_DEFAULT_FRAMES, 64 MiB)
// and "vcpus=N" vCPUs (default 1), read from the module's string, else from
// the hypervisor's command line, as are its grant table's limits
// "max_grant_frames=N" and "max_maptrack_frames=N" (xl.cfg(5)'s names;
// Xen's defaults 64 and 1024, at most those: pv/grants.h); then its own
// words (apply_module_words).
// vCPUs are pinned one per CPU, in module order (domain 1's vCPU 0 on this
// CPU). The run ends when the last running domain shuts down.
[[noreturn]] void run_guests(unsigned cpus_online)
{
    unsigned nr = 0;
    CpuId next_cpu = 0;
    bool runs[BootInfo::kMaxModules] = {};   // a module's domain, not a peer
    for (unsigned i = 0; i < BootInfo::kMaxModules && i < g_boot.nr_modules && nr < BootInfo::kMaxModules; ++i) {
        const BootInfo::Module& m = g_boot.modules[i];
        if (m.end <= m.start) continue;
        if (ramdisk_module(m)) {
            printk("pvmmu: FAILED: domain %u: module %u (\"%s\") is a ramdisk with no kernel module before it\n",
                   nr + 1, i, m.cmdline);
            hv_exit(HV_EXIT_FAILURE);
        }
        const bool has_ramdisk = i + 1 < BootInfo::kMaxModules && i + 1 < g_boot.nr_modules &&
                                 ramdisk_module(g_boot.modules[i + 1]);
        const BootInfo::Module* rd = has_ramdisk ? &g_boot.modules[i + 1] : nullptr;
        uint64_t frames = HV_DEFAULT_FRAMES, vcpus = 1;
        uint64_t grant_frames = gnt::kDefaultMaxFrames, maptrack_frames = gnt::kDefaultMaxMaptrackFrames;
        for (const char* cl : {static_cast<const char*>(g_boot.cmdline), m.cmdline}) {
            (void)domain_uint(nr + 1, cl, "frames", frames);
            (void)domain_uint(nr + 1, cl, "vcpus", vcpus);
            (void)domain_uint(nr + 1, cl, "max_grant_frames", grant_frames);
            (void)domain_uint(nr + 1, cl, "max_maptrack_frames", maptrack_frames);
        }
        if (!grant_frames_ok(grant_frames)) {
            printk("pvmmu: FAILED: domain %u: max_grant_frames=%lu: must be %u..%u (xl.cfg(5))\n", nr + 1,
                   grant_frames, kMinGrantFrames, kMaxGrantFrames);
            hv_exit(HV_EXIT_FAILURE);
        }
        if (!maptrack_frames_ok(maptrack_frames)) {
            printk("pvmmu: FAILED: domain %u: max_maptrack_frames=%lu: must be 0..%u (xl.cfg(5))\n", nr + 1,
                   maptrack_frames, kMaxMaptrackFrames);
            hv_exit(HV_EXIT_FAILURE);
        }
        if (vcpus == 0 || !range_within(next_cpu, vcpus, 0, cpus_online)) {
            printk("pvmmu: FAILED: domain %u wants vcpus=%lu, but only %u of %u CPUs are left (one per vCPU)\n",
                   nr + 1, vcpus, cpus_online - next_cpu, cpus_online);
            hv_exit(HV_EXIT_FAILURE);
        }
        printk("domain %u: loading module %u (\"%s\", %lu bytes)\n", nr + 1, i, m.cmdline, m.end - m.start);
        if (rd)
            printk("domain %u: its ramdisk: module %u (\"%s\", %lu bytes)\n", nr + 1, i + 1, rd->cmdline,
                   rd->end - rd->start);
        if (guest_load(DomId(nr + 1), dmap<const uint8_t>(Maddr{m.start}), m.end - m.start,
                       rd ? dmap<const uint8_t>(Maddr{rd->start}) : nullptr, rd ? rd->end - rd->start : 0, frames,
                       unsigned(vcpus), next_cpu, m.cmdline, g_guests[nr])) {
            printk("pvmmu: FAILED: domain %u was not built\n", nr + 1);
            hv_exit(HV_EXIT_FAILURE);
        }
        if (int rc = guest_grants_init(g_guests[nr], GrantLimits{uint32_t(grant_frames), uint32_t(maptrack_frames)})) {
            printk("pvmmu: FAILED: domain %u: no memory for its grant table (error %d)\n", nr + 1, rc);
            hv_exit(HV_EXIT_FAILURE);
        }
        next_cpu += CpuId(vcpus);
        runs[nr] = true;
        apply_module_words(m.cmdline, nr, next_cpu, cpus_online);
        ++nr;
        if (rd) ++i;   // the ramdisk is this domain's, not a kernel
    }
    // A domain with the unsafe native window can rewrite its own page tables,
    // so it could map any frame: it runs alone (docs/abi.md §10).
    DomId unsafe = 0;
    for (unsigned d = 0; d < nr; ++d)
        if (native_window_l4e(DomId(d + 1))) unsafe = DomId(d + 1);
    if (unsafe && guest_domains_started() > 1)
        boot_failed(unsafe, "an unsafe-native-pt domain must run alone; domains", guest_domains_started());
    report_core_invariants();
    selftests(g_boot, SelftestStep::GuestsBuilt, g_guests, nr);
    for (unsigned d = nr; d-- > 0;) {
        if (!runs[d]) continue;
        Vcpu& v = g_guests[d].dom.vcpus[0];
        printk("domain %u: starting vCPU 0 on cpu %u\n", d + 1, v.cpu);
        (void)vcpu_up(v);
    }
    cpu_idle();   // runs domain 1's vCPU 0, handed to this CPU just now
}

// The rest of boot, on the boot CPU's own per-CPU stack.
[[noreturn]] void bsp_continue()
{
    pic_mask_all();
    lapic_init();
    const uint32_t bsp_apic = lapic_id();
    g_cpus[0].apic_id = bsp_apic;
    find_cpus(bsp_apic);

    const FrameCounts f = core_init(g_boot);
    printk("frames: %lu machine frames: %lu hypervisor, %lu free, %lu I/O or firmware\n", f.total,
           f.xen, f.free, f.io);
    cpu_online(g_cpus[0], ", boot CPU");
    cpu_features_print();
    time_init();   // before the APs: the PIT is the boot CPU's alone
    lapic_timer_init();   // measures the APIC's clock where it needs to, before the APs
    printk("lapic timer: %s mode, vector 0x%x\n", lapic_timer_mode(), unsigned(kVectorTimer));

    const unsigned online = smp_boot();
    printk("smp: %u of %u CPUs online\n", online, g_nr_cpus);

    // Every AP runs on the hypervisor's addresses now: the trampoline's
    // identity mapping goes, and every TLB that may still hold it is flushed.
    paging_drop_identity();
    CpuMask all;
    for (unsigned i = 0; i < g_nr_cpus; ++i) all.set(i);
    shootdown_flush(all, FlushRequest{});
    printk("paging: identity map dropped; TLBs flushed on %u CPUs (%lu IPIs)\n", online,
           shootdown_ipis_sent());

    report_invariants();
    selftests(g_boot, SelftestStep::BeforeGuests);
    if (g_boot.nr_modules) run_guests(online);
    report_core();
    selftests(g_boot, SelftestStep::CoreChecked);
    if (online != g_nr_cpus) {
        printk("pvmmu: FAILED: not every CPU came online\n");
        hv_exit(HV_EXIT_FAILURE);
    }
    boot_time_report("boot complete");
    printk("pvmmu: boot complete; no domain to run yet, ending (isa-debug-exit)\n");
    hv_exit(HV_EXIT_SUCCESS);
}

} // namespace

} // namespace pvmmu::x86

using namespace pvmmu::x86;

// From boot/boot32.S: 64-bit mode on the boot tables and the boot stack.
// `mb_magic` says which Multiboot protocol `mb_info` belongs to.
extern "C" [[noreturn]] void bsp_main(uint32_t mb_info, uint32_t mb_magic)
{
    percpu_early_bsp();
    console_init();
    idt_init();
    idt_load();

    const char* bad = boot_info_parse(mb_magic, mb_info, g_boot);
    printk("\npvmmu-hv: x86-64 paravirtual-MMU hypervisor (%s%s%s)\n", g_boot.protocol,
           g_boot.loader[0] ? ", " : "", g_boot.loader);
    if (bad) {
        printk("pvmmu: FAILED: boot information at 0x%x: %s\n", mb_info, bad);
        hv_exit(HV_EXIT_FAILURE);
    }
    printk("boot: cmdline \"%s\"\n", g_boot.cmdline);
    memory_map_print(g_boot);

    boot_alloc_init(g_boot);
    paging_build(g_boot);
    selftests(g_boot, SelftestStep::Paging);
    percpu_area_build(0, 0);   // APIC ID filled in once the APIC is up
    percpu_load(g_cpus[0]);
    switch_stack(g_cpus[0].stack_top, bsp_continue);
    halt_forever();
}
