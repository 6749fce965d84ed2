/* The bare-metal memory layout, shared by the linker script, the assembly and
 * the C++ (so plain C preprocessor syntax only; see docs/boot.md for the map).
 *
 * The hypervisor lives only in the L4 slots Xen x86-64 reserves to itself
 * (256..271, HYPERVISOR_VIRT_START..END in <xen/arch-x86/xen-x86_64.h>), so a
 * PV guest's L4 can hold the hypervisor's slots next to its own — the core
 * refuses guest entries there (HvConfig::l4_reserved_first/last). The lower
 * half (slots 0..255) and slots 272..511 belong to guests; after boot the
 * hypervisor maps nothing there. */
#pragma once

/* Physical: the image is loaded at 1 MiB (Multiboot load_addr). */
#define HV_IMAGE_PHYS      0x100000

/* AP start-up trampoline: copied below 1 MiB because a start-up IPI starts the
 * AP in real mode at CS = vector << 8, IP = 0 (SDM Vol. 3A, "MP Initialization
 * Protocol Algorithm"). QEMU's Multiboot info sits at 0x9000+; one page here
 * stays below it. */
#define HV_TRAMPOLINE_PHYS 0x8000

/* Slot 256: the read-only machine-to-phys table guests read
 * (MACH2PHYS_VIRT_START, Xen ABI), in guest L4s only (mm/m2p_map.h): never in
 * the hypervisor's own tables. */
#define HV_SLOT_M2P        256
#define HV_M2P_VIRT        0xFFFF800000000000

/* Slot 257: per-CPU areas, HV_PERCPU_STRIDE each (see cpu/percpu.h). */
#define HV_PERCPU_VIRT     0xFFFF808000000000
#define HV_PERCPU_SHIFT    20
#define HV_PERCPU_STRIDE   (1 << HV_PERCPU_SHIFT)

/* Slot 261: the image, at HV_IMAGE_VIRT + its physical address (as Xen's
 * image in slot 261). 512 GiB aligned, so one L3 entry of the boot tables
 * maps the first GiB of it. */
#define HV_IMAGE_VIRT      0xFFFF828000000000

/* Slot 262: the direct map of all machine memory (Xen's DIRECTMAP_VIRT_START);
 * the core's MachineMemory base. RAM write-back, holes below 4 GiB uncached. */
#define HV_DIRECTMAP_VIRT  0xFFFF830000000000

/* Slot 271, the last of Xen's reserved range: in the L4s of a domain built
 * with the module word "unsafe-native-pt" only, a user-writable alias of that
 * domain's own frames (mm/native_window.h; PVMMU_UNSAFE_NATIVE_WINDOW, the
 * guest's name for it). Never in the hypervisor's own tables. Benchmarking
 * only: it gives the guest its page tables writable. */
#define HV_SLOT_NATIVE_WINDOW 271
#define HV_NATIVE_WINDOW_VIRT 0xFFFF878000000000

/* L4 slots of the above; the invariant check allows nothing else after boot. */
#define HV_SLOT_PERCPU     257
#define HV_SLOT_IMAGE      261
#define HV_SLOT_DIRECTMAP  262

/* The BSP's boot stack (in .bss) until it moves to its per-CPU stack. */
#define HV_BOOT_STACK_SIZE 0x4000
