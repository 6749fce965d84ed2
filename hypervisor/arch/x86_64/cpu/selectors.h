/* The hypervisor's GDT selectors, as plain #defines for the assembly too.
 *
 * They are Xen's: a Xen x86-64 PV guest owns GDT entries below
 * FIRST_RESERVED_GDT_ENTRY (page 14 of a 16-page GDT, <xen/arch-x86/xen.h>)
 * and uses the flat ring-3 selectors FLAT_RING3_* of <xen/arch-x86/xen-x86_64.h>,
 * which live in the hypervisor's page. Each CPU's GDT is a 64 KiB window whose
 * page 14 is the hypervisor's (cpu/percpu.h); cpu/descriptors.h checks these values
 * against Xen's headers and against the SYSCALL/SYSRET layout rules. */
#pragma once

#define HV_SEL_CS       0xe008   /* ring 0 code, 64-bit */
#define HV_SEL_DS       0xe010   /* ring 0 data (also SS) */
                                 /* 0xe018: reserved, as in Xen */
#define HV_SEL_GUEST_CS32 0xe023 /* ring 3 code, compatibility mode */
#define HV_SEL_GUEST_DS   0xe02b /* ring 3 data and stack */
#define HV_SEL_GUEST_CS64 0xe033 /* ring 3 code, 64-bit */
#define HV_SEL_CS32     0xe038   /* ring 0 code, compatibility mode */
#define HV_SEL_TSS      0xe040   /* 16-byte 64-bit TSS descriptor */
#define HV_SEL_LDT      0xe050   /* 16-byte LDT descriptor: the guest's (MMUEXT_SET_LDT) */

#define HV_GDT_RESERVED_OFFSET 0xe000   /* FIRST_RESERVED_GDT_BYTE */
#define HV_GDT_LIMIT           0xefff   /* the end of the hypervisor's page */
