// Application-processor start-up and the AP's first C++; see boot/smp.h.
#include "boot/smp.h"

#include <string.h>

#include "boot/exit.h"
#include "boot/time.h"
#include "cpu/lapic.h"
#include "cpu/x86.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/layout.h"
#include "mm/paging.h"
#include "pv/domain.h"
#include "pv/run.h"

extern "C" const char tramp_start[], tramp_end[], tramp_cr3[], tramp_started[];

uint64_t ap_stack_tops[256];

namespace pvmmu::x86 {

namespace {

// The waits of the INIT-SIPI-SIPI protocol ("MP Initialization Protocol
// Algorithm", SDM Vol. 3A), on the TSC (boot/time.h): time_init has calibrated it
// against the PIT before the first AP starts.
constexpr uint32_t kInitDelayUs = 10000;      // after INIT, before the first SIPI
constexpr uint32_t kSipiDelayUs = 200;        // between the two SIPIs
constexpr uint64_t kOnlineTimeoutUs = 2000000;  // generous: TCG on a loaded host

template <class T>
T* tramp_field(const char* sym)
{
    return dmap<T>(Maddr{HV_TRAMPOLINE_PHYS + uint64_t(sym - tramp_start)});
}

// Polled without a delay between reads: the AP is seen the moment it is up.
bool wait_online(const PerCpu& c)
{
    const uint64_t start = rdtsc(), limit = kOnlineTimeoutUs * tsc_hz() / 1000000;
    while (rdtsc() - start < limit) {
        if (c.state.load(std::memory_order_acquire) == CpuState::Online) return true;
        pause();
    }
    return c.state.load(std::memory_order_acquire) == CpuState::Online;
}

bool start(PerCpu& c)
{
    auto* started = tramp_field<volatile uint32_t>(tramp_started);
    *started = 0;
    ap_stack_tops[c.apic_id] = c.stack_top;
    c.state.store(CpuState::Starting, std::memory_order_release);

    lapic_send_init(c.apic_id);
    tsc_delay_us(kInitDelayUs);
    const uint8_t page = HV_TRAMPOLINE_PHYS >> 12;
    lapic_send_startup(c.apic_id, page);
    tsc_delay_us(kSipiDelayUs);
    // The second SIPI of the protocol, only if the first was lost: a CPU that
    // already runs the trampoline ignores it anyway, but no need to ask.
    if (*started == 0) lapic_send_startup(c.apic_id, page);
    return wait_online(c);
}

} // namespace

unsigned smp_boot()
{
    const uint64_t size = uint64_t(tramp_end - tramp_start);
    if (size > kPageSize) panic("trampoline larger than a page");
    memcpy(dmap(Maddr{HV_TRAMPOLINE_PHYS}), tramp_start, size);
    *tramp_field<uint32_t>(tramp_cr3) = uint32_t(hv_root().v);

    printk("smp: starting %u application processors (trampoline at 0x%x)\n", g_nr_cpus - 1,
           HV_TRAMPOLINE_PHYS);
    unsigned online = 1;
    for (unsigned i = 1; i < g_nr_cpus; ++i) {
        if (start(g_cpus[i])) ++online;
        else printk("smp: cpu %u (apic id %u) did not come online\n", i, g_cpus[i].apic_id);
    }
    return online;
}

void cpu_online(PerCpu& c, const char* note)
{
    c.cr0 = read_cr0();
    c.cr3 = read_cr3();
    c.cr4 = read_cr4();
    c.efer = rdmsr(MSR_EFER);
    core_cpu_online(c.id);
    c.state.store(CpuState::Online, std::memory_order_release);
    printk("cpu %u online (apic id %u%s)\n", c.id, c.apic_id, note);
}

} // namespace pvmmu::x86

using namespace pvmmu::x86;

// The AP's first C++ (from ap_entry64, on its own stack). It idles (cpu_idle) with
// interrupts on, so TLB shootdowns reach it.
extern "C" [[noreturn]] void ap_main(uint32_t apic_id)
{
    PerCpu* c = nullptr;
    for (unsigned i = 1; i < g_nr_cpus; ++i)
        if (g_cpus[i].apic_id == apic_id) c = &g_cpus[i];
    if (!c) halt_forever();   // ap_entry64 gave it a stack, so this cannot happen
    percpu_load(*c);
    lapic_init();
    lapic_timer_init();
    cpu_online(*c, "");
    cpu_idle();
}
