// Local APIC register access and IPIs; see cpu/lapic.h.
#include "cpu/lapic.h"

#include "boot/exit.h"
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

} // namespace

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
