/* Facts about how pvmmu-hv is loaded and where it talks, shared by the
 * assembly and the C++ (plain #defines): the Multiboot 1 header, COM1 and
 * QEMU's isa-debug-exit device with the codes the hypervisor ends QEMU with.
 * The launchers' bash reads the exit codes, the port, HV_DEFAULT_FRAMES and
 * HV_GRANT_MIB from here too (tools/defs.sh): one value per #define. */
#pragma once

/* Multiboot 1 (Multiboot Specification 0.6.96, §3.1.1 "The layout of
 * Multiboot header", §3.2 "Machine state"). */
#define MB1_HEADER_MAGIC 0x1BADB002
#define MB1_BOOT_MAGIC   0x2BADB002   /* in %eax at the entry point */
/* Header flags: bit 0 page-align modules, bit 1 memory info wanted, bit 16
 * the address fields (the "a.out kludge") are valid. A loader then ignores the
 * ELF headers and loads [load_addr, load_end_addr) from the file position of
 * the header minus (header_addr - load_addr): QEMU refuses ELF64 Multiboot
 * images otherwise, so this is what lets one ELF64 file boot with -kernel. */
#define MB1_FLAGS        ((1 << 0) | (1 << 1) | (1 << 16))

/* Multiboot 2 (Multiboot2 Specification 2.0, §3.1 "OS image format", §3.3
 * "I386 machine state"): the header (magic, architecture 0 = i386 protected
 * mode, length, checksum, then 8-byte aligned tags), and EAX at entry. The
 * address tag (2) has the same fields as Multiboot 1's a.out kludge, the
 * entry address tag (3) names _start32: GRUB loads the image as QEMU does. */
#define MB2_HEADER_MAGIC 0xE85250D6
#define MB2_BOOT_MAGIC   0x36D76289
#define MB2_TAG_END      0
#define MB2_TAG_ADDRESS  2
#define MB2_TAG_ENTRY    3

#define COM1_PORT        0x3f8

/* QEMU -device isa-debug-exit,iobase=0xf4,iosize=0x04: a write of v ends QEMU
 * with exit status (v << 1) | 1. On hardware the write goes nowhere and the
 * hypervisor halts instead. tests/qemu/ and ./pvmmu boot map these back. */
#define DEBUG_EXIT_PORT  0xf4
#define HV_EXIT_SUCCESS  0x10   /* QEMU status 33: booted, every check passed */
#define HV_EXIT_FAILURE  0x11   /* QEMU status 35: a boot check failed */
#define HV_EXIT_PANIC    0x12   /* QEMU status 37: exception or panic */

/* The last domain shut down with reason r (SHUTDOWN_* of <xen/sched.h>, 0-5):
 * code HV_EXIT_SHUTDOWN + r, QEMU status 65 + 2r: poweroff 65, reboot 67,
 * suspend 69, crash 71 (also a guest the hypervisor crashed), watchdog 73,
 * soft_reset 75. docs/boot.md "Exit codes". */
#define HV_EXIT_SHUTDOWN 0x20

/* A domain's frames when neither its module string nor the command line says
 * frames= (boot/main.cc run_guests): 64 MiB. */
#define HV_DEFAULT_FRAMES 16384

/* What a domain's grant table takes beyond its frames, at most (its limits
 * at Xen's defaults, which are also the most it may ask for: pv/grants.h,
 * which checks this), in MiB: its table frames and the hypervisor's storage
 * of its active entries and maptrack. The launchers size the machine with
 * it (tools/run_qemu.cc pvmmu_machine). */
#define HV_GRANT_MIB 11
