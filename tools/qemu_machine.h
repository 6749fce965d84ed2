/* The machine pvmmu's launchers give QEMU, for the C++ (tools/run_backend.h)
 * and for bash (tools/defs.sh reads these lines: tests/qemu/boot_test.sh,
 * ./pvmmu boot and ./pvmmu iso). One plain #define of one value per line, a
 * number or a string, so that a shell reads it with sed;
 * tests/tools/machine_defs_test.cc checks that both read the same. The exit
 * codes and the debug-exit port are the hypervisor's own
 * (hypervisor/arch/x86_64/boot/boot_defs.h), read the same way. */
#pragma once

/* QEMU's CPU models. TCG: its default model with the protection features a
 * modern CPU has and pvmmu-hv turns on (SMEP, SMAP, UMIP:
 * hypervisor/arch/x86_64/cpu/cpu_features.h), all of which TCG implements, so
 * every TCG run exercises them. Without SMAP: for guests that far-return or
 * IRET in ring 3, which QEMU 7.2's TCG gets wrong under SMAP (docs/boot.md
 * "CPU features"). KVM: the host's own CPU. */
#define PVMMU_QEMU_TCG_CPU         "qemu64,+smep,+smap,+umip"
#define PVMMU_QEMU_TCG_CPU_NO_SMAP "qemu64,+smep,+umip"
#define PVMMU_QEMU_KVM_CPU         "host"
#define PVMMU_QEMU_MACHINE         "pc"

/* The memory the hypervisor needs for itself, in MiB; the machine has this
 * plus the domains' frames (tools/run_qemu.cc pvmmu_machine). */
#define PVMMU_HV_MIB 128
