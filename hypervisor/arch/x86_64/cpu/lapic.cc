// Local APIC register access and IPIs; see cpu/lapic.h.
#include "cpu/lapic.h"

#include <pvmmu/abi.h>   // before boot/time.h's Xen header

#include "boot/exit.h"
#include "boot/time.h"
#include "cpu/percpu.h"
#include "cpu/cpu_bits.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "mm/direct_map.h"

namespace pvmmu::x86 {

namespace {

// Register offsets ("Local APIC Register Address Map").
constexpr uint32_t kId = 0x20, kTpr = 0x80, kEoi = 0xb0, kSvr = 0xf0, kIcrLow = 0x300, kIcrHigh = 0x310;
constexpr uint32_t kLvtLint0 = 0x350;
constexpr uint32_t kLvtMasked = 1u << 16;
// The timer's registers and modes ("APIC Timer", SDM Vol. 3A 10.5.4; the LVT
// timer register's bits 18:17, Figure 10-8; the divide configuration's bits
// 3, 1:0 = 1011b: divide by 1, Figure 10-10).
constexpr uint32_t kLvtTimer = 0x320, kInitialCount = 0x380, kCurrentCount = 0x390, kDivide = 0x3e0;
constexpr uint32_t kTimerOneShot = 0u << 17, kTimerTscDeadline = 2u << 17;
constexpr uint32_t kDivideBy1 = 0xb;
constexpr uint32_t kMsrTscDeadline = 0x6e0;      // IA32_TSC_DEADLINE
constexpr uint32_t kCpuid1EcxTscDeadline = 1u << 24;
constexpr uint32_t kCalibrateUs = 10000;

constexpr uint64_t kApicBaseEnable = 1u << 11, kApicBaseX2 = 1u << 10;
constexpr uint64_t kApicBaseAddr = 0x000ffffffffff000ull;
constexpr uint32_t kSvrEnable = 1u << 8;

// ICR low bits ("Interrupt Command Register (ICR)"): delivery mode 10:8,
// delivery status 12, level 14. Destination mode physical, no shorthand.
constexpr uint32_t kModeFixed = 0u << 8, kModeInit = 5u << 8, kModeStartup = 6u << 8;
constexpr uint32_t kDeliveryPending = 1u << 12, kLevelAssert = 1u << 14;

uint64_t g_phys = 0xfee00000;   // the architectural default until lapic_init reads the MSR

volatile uint32_t& reg(uint32_t off) { return *dmap<volatile uint32_t>(Maddr{g_phys + off}); }

void send(uint32_t apic_id, uint32_t low)
{
    while (reg(kIcrLow) & kDeliveryPending) pause();
    reg(kIcrHigh) = apic_id << 24;
    reg(kIcrLow) = low;   // this write sends
    while (reg(kIcrLow) & kDeliveryPending) pause();
}

// The timer: TSC-deadline mode, or one-shot counting g_apic_per_tsc APIC
// ticks per TSC tick (32.32 fixed point), measured once by the boot CPU.
bool g_deadline_mode = false;
uint64_t g_apic_per_tsc = 0;
// The TSC value each CPU's timer is armed for (0: disarmed), so the return
// to a guest, which arms it every time, touches the APIC only on a change.
uint64_t g_armed[kMaxCpus];

void calibrate()
{
    reg(kLvtTimer) = kLvtMasked | kTimerOneShot | kVectorTimer;
    reg(kDivide) = kDivideBy1;
    const uint64_t t0 = rdtsc();
    reg(kInitialCount) = ~0u;
    tsc_delay_us(kCalibrateUs);
    const uint32_t left = reg(kCurrentCount);
    const uint64_t t1 = rdtsc();
    reg(kInitialCount) = 0;
    const uint64_t counted = uint64_t(~0u - left);
    g_apic_per_tsc = t1 > t0 ? (counted << 32) / (t1 - t0) : 0;
    if (g_apic_per_tsc == 0) g_apic_per_tsc = 1;   // defensive: an APIC clock too slow to see
}

} // namespace

void lapic_timer_init()
{
    g_deadline_mode = cpuid(1).ecx & kCpuid1EcxTscDeadline;
    if (!g_deadline_mode && !g_apic_per_tsc) calibrate();   // the boot CPU, first
    g_armed[this_cpu_id()] = 0;
    if (g_deadline_mode) {
        reg(kLvtTimer) = kTimerTscDeadline | kVectorTimer;
        // The MMIO write must reach the APIC before a WRMSR to the deadline,
        // which is not serializing (10.5.4.1: MFENCE between them).
        asm volatile("mfence" ::: "memory");
        wrmsr(kMsrTscDeadline, 0);
        return;
    }
    reg(kDivide) = kDivideBy1;
    reg(kLvtTimer) = kTimerOneShot | kVectorTimer;
    reg(kInitialCount) = 0;   // 0 stops the count: disarmed
}

void lapic_timer_arm(uint64_t tsc)
{
    uint64_t& armed = g_armed[this_cpu_id()];
    if (armed == tsc) return;
    armed = tsc;
    if (g_deadline_mode) {
        wrmsr(kMsrTscDeadline, tsc);   // one in the past fires at once (10.5.4.1)
        return;
    }
    if (!tsc) {
        reg(kInitialCount) = 0;
        return;
    }
    const uint64_t now = rdtsc();
    // At most 2^40 TSC ticks ahead (minutes), so the product fits; a later
    // deadline fires early and is armed again (the handler forgets it).
    uint64_t delta = tsc > now ? tsc - now : 0;
    if (delta > (1ull << 40)) delta = 1ull << 40;
    uint64_t count = uint64_t((unsigned __int128)delta * g_apic_per_tsc >> 32) + 1;   // never 0: that stops it
    if (count > ~0u) count = ~0u;
    reg(kInitialCount) = uint32_t(count);
}

void lapic_timer_fired() { g_armed[this_cpu_id()] = 0; }

const char* lapic_timer_mode() { return g_deadline_mode ? "tsc-deadline" : "one-shot"; }

void lapic_init()
{
    uint64_t base = rdmsr(MSR_APIC_BASE);
    if (base & kApicBaseX2) panic("the local APIC is in x2APIC mode; only xAPIC is supported yet");
    g_phys = base & kApicBaseAddr;
    if (!(base & kApicBaseEnable)) wrmsr(MSR_APIC_BASE, base | kApicBaseEnable);
    reg(kTpr) = 0;
    reg(kSvr) = kSvrEnable | kVectorSpurious;
    // LINT0 is where firmware wires the legacy 8259 PIC (ExtINT) on the boot
    // CPU. Masked, no PIC interrupt — its timer, or a spurious IRQ 7 — can
    // arrive with a vector that collides with an exception (the BIOS uses
    // vector 8 for the timer: #DF).
    reg(kLvtLint0) = reg(kLvtLint0) | kLvtMasked;
}

void pic_mask_all()
{
    outb(0x21, 0xff);   // master 8259 interrupt mask register
    outb(0xa1, 0xff);   // slave
}

uint32_t lapic_id() { return reg(kId) >> 24; }
void lapic_eoi() { reg(kEoi) = 0; }

void lapic_send_init(uint32_t apic_id) { send(apic_id, kModeInit | kLevelAssert); }
void lapic_send_startup(uint32_t apic_id, uint8_t page) { send(apic_id, kModeStartup | kLevelAssert | page); }
void lapic_send_fixed(uint32_t apic_id, uint8_t vector) { send(apic_id, kModeFixed | kLevelAssert | vector); }

} // namespace pvmmu::x86
