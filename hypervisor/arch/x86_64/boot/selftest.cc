// The boot self-tests; see boot/selftest.h. Each entry of kSelftests is one
// `selftest=NAME`, the step of boot it runs at and what it does; the
// expected outcome is its QEMU test's (tests/qemu/boot_test.sh).
#include "boot/selftest.h"

#include <atomic>

#include "boot/boot_alloc.h"
#include "boot/exit.h"
#include "cpu/cpu_features.h"
#include "cpu/descriptors.h"
#include "cpu/exceptions.h"
#include "cpu/percpu.h"
#include "cpu/selectors.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/layout.h"
#include "mm/paging.h"

namespace pvmmu::x86 {

namespace {

// selftest=dbentry: the domain whose first #DB from ring 3 is turned into a
// #DB held over its INT1; 0: none. Set at boot before any vCPU starts,
// cleared by the CPU that runs it, read by every CPU's #DB from ring 3.
std::atomic<unsigned> g_debug_entry_selftest;

// selftest=badmap: plants the three kinds of mapping the invariant check
// exists to refuse, so the QEMU test proves it catches them.
void plant_bad_mappings(const BootInfo&, GuestDomain*, unsigned)
{
    const Maddr f = boot_alloc_frame();
    const uint64_t spare = HV_PERCPU_VIRT + uint64_t(kMaxCpus) * HV_PERCPU_STRIDE;
    map_page(Vaddr{spare}, f, pte_bit::P | pte_bit::RW);                         // W+X
    map_page(Vaddr{spare + kPageSize}, f, hv_pte::kRodata | pte_bit::US);        // user
    map_page(Vaddr{0x0000'4000'0000'0000}, f, hv_pte::kRodata);                  // guest half
    printk("selftest: planted a W+X page, a user page and a lower-half page\n");
}

// selftest=trap: raises #UD, so the QEMU test can check that an exception is
// reported with its vector and RIP. Before any domain runs, so a panic on
// purpose also ends a machine with guests (a libvirt domain that must end
// crashed: tests/tools/libvirt_*).
void raise_exception(const BootInfo&, GuestDomain*, unsigned)
{
    printk("selftest: raising #UD\n");
    asm volatile("ud2");
}

[[gnu::noinline]] uint64_t recurse(uint64_t depth)
{
    volatile uint8_t frame[512];
    frame[0] = uint8_t(depth);
    if (depth == ~0ull) return 0;   // never: keeps the recursion from looking infinite
    return recurse(depth + 1) + frame[0];
}

// selftest=overflow: recurses until the stack runs into its guard page. The
// page fault cannot push its frame there, so the CPU raises #DF, which runs
// on its IST stack and is reported.
void overflow_stack(const BootInfo&, GuestDomain*, unsigned)
{
    printk("selftest: overflowing the stack into its guard page\n");
    (void)recurse(0);
}

// selftest=badreturn: the last domain's first entry names the hypervisor's
// stack selector with RPL 3, a frame no guest can ask for and every CPU (TCG
// too) refuses. The IRETQ faults in ring 0 on the guest's %gs
// (cpu/trap_entry.S), on the last vCPU's CPU; that domain must crash, not
// the hypervisor or the other domains.
void bad_return(const BootInfo&, GuestDomain* guests, unsigned nr)
{
    if (!nr) return;
    printk("selftest: domain %u starts with a ring-0 stack selector\n", nr);
    arch(guests[nr - 1].dom.vcpus[0]).start.ss = HV_SEL_DS | 3;
}

// selftest=dbentry: the last domain's first #DB from ring 3 becomes a #DB
// held over an INT1, over the INT1's frame on the #DB IST stack (cpu/traps.cc
// debug_over_debug_entry); that domain must crash, not the hypervisor.
void debug_entry(const BootInfo&, GuestDomain*, unsigned nr)
{
    if (!nr) return;
    printk("selftest: domain %u's first #DB lands on the #DB stub\n", nr);
    g_debug_entry_selftest.store(nr, std::memory_order_relaxed);   // before any vCPU starts
}

// selftest=smap: the hypervisor reads domain 1's entry point, a present user
// page, under its page tables: outside guest_copy's window the read must
// fault (cpu/cpu_features.h smap_selftest).
void smap(const BootInfo&, GuestDomain* guests, unsigned nr)
{
    if (!nr) return;
    Vcpu& v = guests[0].dom.vcpus[0];
    if (smap_selftest(maddr_of(v.guest_table).v, arch(v).start.rip)) return;
    printk("pvmmu: FAILED: domain %u: %s (%lu)\n", 1u,
           "selftest: SMAP did not keep the hypervisor out of a user page; CR4", read_cr4());
    hv_exit(HV_EXIT_FAILURE);
}

struct Selftest {
    const char* word;   // the command-line word that runs it
    SelftestStep step;
    void (*run)(const BootInfo& boot, GuestDomain* guests, unsigned nr);
};

constexpr Selftest kSelftests[] = {
    {"selftest=badmap", SelftestStep::Paging, plant_bad_mappings},
    {"selftest=trap", SelftestStep::BeforeGuests, raise_exception},
    {"selftest=badreturn", SelftestStep::GuestsBuilt, bad_return},
    {"selftest=dbentry", SelftestStep::GuestsBuilt, debug_entry},
    {"selftest=smap", SelftestStep::GuestsBuilt, smap},
    {"selftest=overflow", SelftestStep::CoreChecked, overflow_stack},
};

} // namespace

void selftests(const BootInfo& boot, SelftestStep step, GuestDomain* guests, unsigned nr)
{
    for (const Selftest& t : kSelftests)
        if (t.step == step && cmdline_has(boot, t.word)) t.run(boot, guests, nr);
}

// selftest=dbentry's #DB: turned into the state a #DB held over an INT1
// leaves on a CPU (debug_over_debug_entry, cpu/traps.cc), which neither TCG
// nor Bochs produces: the guest's %gs back, RSP where the stub would start,
// and an INT $1 that ends at the stub (debug_entry_selftest_int1,
// cpu/trap_entry.S), whose frame overwrites the guest's at the top of the
// #DB IST stack as the held-over #DB's does.
extern "C" char debug_entry_selftest_int1[];

void selftest_guest_debug()
{
    const unsigned selftest = g_debug_entry_selftest.load(std::memory_order_relaxed);
    if (!selftest || !this_cpu().vcpu || this_cpu().vcpu->domain->id != selftest) return;
    g_debug_entry_selftest.store(0, std::memory_order_relaxed);   // once
    const uint64_t below_frame = this_cpu().tss.ist[kIstDebug - 1] - 5 * sizeof(uint64_t);
    if (reinterpret_cast<uint64_t>(debug_entry_selftest_int1) + 2 != trap_stubs[kExcDB])
        panic("selftest: dbentry: the INT $1 does not end at the #DB stub");
    printk("selftest: dbentry: the #DB stub's frame over the guest's\n");
    asm volatile("swapgs\n\t"
                 "mov %0, %%rsp\n\t"
                 "jmp debug_entry_selftest_int1"
                 :
                 : "r"(below_frame)
                 : "memory");
    __builtin_unreachable();
}

} // namespace pvmmu::x86
