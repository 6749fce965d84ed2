// hv_exit and panic; see boot/exit.h.
#include "boot/exit.h"

#include "boot/acpi.h"
#include "cpu/cpu_bits.h"
#include "cpu/percpu.h"
#include "cpu/x86.h"
#include "lib/console.h"

namespace pvmmu::x86 {

namespace {

// Found at boot (exit_find_power), when the ACPI tables are still where the
// firmware put them; read at the end, perhaps in a panic.
constinit PowerInfo g_power;

// PM1 control register bits (ACPI §4.8.3.2.1, table "PM1 Control Registers").
constexpr uint16_t kSciEn = 1u << 0, kSlpTypShift = 10, kSlpTypMask = 7u << kSlpTypShift, kSlpEn = 1u << 13;
// pvpanic's register (QEMU docs/specs/pvpanic.rst): read, the events it
// takes; written, the event. No device reads as all ones.
constexpr uint8_t kPvpanicPanicked = 1u << 0;

// ACPI mode (SCI_EN) before sleep control means anything (§4.8.2.1): a
// firmware that starts in legacy mode enters it when ACPI_ENABLE is written
// to SMI_CMD (§16.3.1), in its own time; bounded by a count of port reads.
void enter_acpi_mode()
{
    if (inw(g_power.pm1a_cnt) & kSciEn) return;
    if (!g_power.smi_cmd || !g_power.acpi_enable) return;
    outb(g_power.smi_cmd, g_power.acpi_enable);
    for (unsigned i = 0; i < 3'000'000 && !(inw(g_power.pm1a_cnt) & kSciEn); ++i) {
    }
}

void write_slp(uint16_t port, uint8_t typ, uint16_t en)
{
    if (!port) return;
    outw(port, uint16_t((inw(port) & ~(kSlpTypMask | kSlpEn)) | typ << kSlpTypShift | en));
}

// Soft-off (S5): SLP_TYPx, then SLP_EN with it, into PM1a_CNT and PM1b_CNT.
// Without \_S5 or a PM1a_CNT the value to write is unknown: nothing is written.
void power_off()
{
    if (!g_power.s5 || !g_power.pm1a_cnt) {
        panic_printk("pvmmu: cannot power off (%s); halting\n", g_power.pm1a_cnt ? "no \\_S5 in the DSDT"
                                                                                  : "no FADT PM1a_CNT");
        return;
    }
    panic_printk("pvmmu: powering off (ACPI S5: SLP_TYP %u into port 0x%x)\n", g_power.slp_typa, g_power.pm1a_cnt);
    enter_acpi_mode();
    write_slp(g_power.pm1a_cnt, g_power.slp_typa, 0);
    write_slp(g_power.pm1b_cnt, g_power.slp_typb, 0);
    write_slp(g_power.pm1a_cnt, g_power.slp_typa, kSlpEn);
    write_slp(g_power.pm1b_cnt, g_power.slp_typb, kSlpEn);
}

void report_panic()
{
    // The default port only where a hypervisor is underneath (QEMU's device
    // lives there): on hardware 0x505 may be a chipset register (ICH/PCH
    // GPIO or PM blocks start at 0x500), so only a port ACPI names is used.
    if (!g_power.pvpanic_from_acpi && !(cpuid(1).ecx & CPUID_1_ECX_HYPERVISOR)) {
        panic_printk("pvmmu: no pvpanic device named by ACPI on this machine; halting\n");
        return;
    }
    const uint8_t events = inb(g_power.pvpanic_port);
    if (events == 0xff || !(events & kPvpanicPanicked)) {
        panic_printk("pvmmu: no pvpanic device at port 0x%x; halting\n", g_power.pvpanic_port);
        return;
    }
    panic_printk("pvmmu: reporting the panic to the host (pvpanic at port 0x%x)\n", g_power.pvpanic_port);
    outb(g_power.pvpanic_port, kPvpanicPanicked);
}

} // namespace

void exit_find_power(uint64_t rsdp)
{
    acpi_find_power(rsdp, g_power);
    printk("acpi: ");
    if (g_power.s5) printk("S5 is SLP_TYP %u/%u", g_power.slp_typa, g_power.slp_typb);
    else printk("no \\_S5");
    printk(", PM1a_CNT 0x%x", g_power.pm1a_cnt);
    if (g_power.pm1b_cnt) printk(", PM1b_CNT 0x%x", g_power.pm1b_cnt);
    printk("; pvpanic at 0x%x (%s)\n", g_power.pvpanic_port, g_power.pvpanic_from_acpi ? "ACPI QEMU0001" : "default");
}

void hv_exit(uint32_t code)
{
    cli();
    // Plain QEMU (tests, pvmmu-run --platform qemu): the device ends QEMU
    // with the code, and nothing below runs.
    outl(DEBUG_EXIT_PORT, code);
    // A machine without it (libvirt, hardware): its host sees a panic or a
    // failed boot as a crash, the end of the last domain as a power-off.
    if (code == HV_EXIT_PANIC || code == HV_EXIT_FAILURE) report_panic();
    else power_off();
    halt_forever();
}

void panic(const char* fmt, ...)
{
    cli();
    panic_printk("PANIC: cpu %u: ", this_cpu_id());
    va_list ap;
    va_start(ap, fmt);
    panic_vprintk(fmt, ap);
    va_end(ap);
    panic_printk("\n");
    hv_exit(HV_EXIT_PANIC);
}

} // namespace pvmmu::x86
