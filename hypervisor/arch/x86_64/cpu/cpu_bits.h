/* Architectural bit positions and MSR numbers the boot path uses, shared by the
 * assembly and the C++ (plain #defines). Section names are those of the Intel
 * SDM Vol. 3A; bit numbers are hardware facts, checked where C++ uses them. */
#pragma once

/* CR0 ("Control Registers"). */
#define CR0_PE   (1 << 0)    /* protection enable */
#define CR0_MP   (1 << 1)    /* monitor coprocessor: WAIT/FWAIT honour TS */
#define CR0_TS   (1 << 3)    /* task switched: x87/SSE instructions raise #NM */
#define CR0_NE   (1 << 5)    /* x87 errors as #MF, not the legacy FERR# line */
#define CR0_WP   (1 << 16)   /* supervisor writes honour read-only pages */
#define CR0_AM   (1 << 18)   /* alignment mask: ring 3 with EFLAGS.AC set raises #AC on a misaligned access */
#define CR0_PG   (1 << 31)   /* paging */

/* RFLAGS ("EFLAGS Register", SDM Vol. 1; 64-bit RFLAGS keeps its bits). */
#define RFLAGS_CF    (1 << 0)
#define RFLAGS_FIXED (1 << 1)    /* reserved, always 1 */
#define RFLAGS_PF    (1 << 2)
#define RFLAGS_AF    (1 << 4)
#define RFLAGS_ZF    (1 << 6)
#define RFLAGS_SF    (1 << 7)
#define RFLAGS_TF    (1 << 8)    /* single step */
#define RFLAGS_IF    (1 << 9)    /* interrupts enabled */
#define RFLAGS_DF    (1 << 10)   /* string instructions count down */
#define RFLAGS_OF    (1 << 11)
#define RFLAGS_IOPL  (3 << 12)   /* I/O privilege level */
#define RFLAGS_NT    (1 << 14)
#define RFLAGS_RF    (1 << 16)   /* resume: no instruction breakpoint on the next instruction */
#define RFLAGS_VM    (1 << 17)   /* virtual-8086 mode: never set in IA-32e mode */
#define RFLAGS_AC    (1 << 18)   /* alignment check; with CR4.SMAP, user pages open to ring 0 */
#define RFLAGS_ID    (1 << 21)

/* CR4. */
#define CR4_DE   (1 << 3)    /* debugging extensions: DR4/DR5 #UD, I/O breakpoints */
#define CR4_PAE  (1 << 5)    /* 64-bit page-table entries; required for IA-32e */
#define CR4_MCE  (1 << 6)
#define CR4_OSFXSR     (1 << 9)    /* SSE instructions, FXSAVE/FXRSTOR of the XMM state */
#define CR4_OSXMMEXCPT (1 << 10)   /* unmasked SIMD FP exceptions as #XM, not #UD */
#define CR4_PGE  (1 << 7)
#define CR4_UMIP (1 << 11)   /* SGDT, SIDT, SLDT, SMSW, STR: #GP outside ring 0 */
#define CR4_FSGSBASE (1 << 16)   /* RDFSBASE/WRGSBASE etc. in any ring: never on */
#define CR4_SMEP (1 << 20)   /* supervisor may not execute user pages */
#define CR4_SMAP (1 << 21)   /* supervisor may not read or write user pages unless EFLAGS.AC */

/* CPUID leaf 07H, sub-leaf 0 ("Structured Extended Feature Flags"). */
#define CPUID_7_EBX_SMEP (1 << 7)
#define CPUID_7_EBX_SMAP (1 << 20)
#define CPUID_7_EBX_RTM  (1 << 11)
#define CPUID_7_ECX_UMIP (1 << 2)
#define CPUID_7_ECX_BUS_LOCK_DETECT (1 << 24)
/* CPUID leaf 01H. */
#define CPUID_1_EDX_DE   (1 << 2)
#define CPUID_1_ECX_HYPERVISOR (1u << 31)   /* running under a hypervisor (SDM: reserved, 0 on hardware) */

/* IA32_EFER (MSR C000_0080H, "IA32_EFER MSR Information"). */
#define MSR_EFER       0xC0000080
#define EFER_SCE       (1 << 0)    /* SYSCALL/SYSRET */
#define EFER_LME       (1 << 8)    /* IA-32e mode enable */
#define EFER_LMA       (1 << 10)   /* IA-32e mode active (read-only) */
#define EFER_NXE       (1 << 11)   /* execute-disable bit 63 of entries honoured */

#define MSR_APIC_BASE  0x1B        /* bit 11: xAPIC global enable, 10: x2APIC */
#define MSR_FS_BASE    0xC0000100
#define MSR_GS_BASE    0xC0000101  /* %gs base: this CPU's PerCpu */
#define MSR_KERNEL_GS_BASE 0xC0000102

/* CPUID leaf 8000_0001H EDX ("CPUID—CPU Identification"). */
#define CPUID_EXT_NX   (1 << 20)
#define CPUID_EXT_LM   (1 << 29)

/* Page-table entry bits the 32-bit boot code needs ("Paging", 4-level tables;
 * C++ uses core/pte.h, asserted equal in mm/paging.cc). */
#define PTE_P    0x1
#define PTE_RW   0x2
#define PTE_PS   0x80   /* in an L2 entry: a 2 MiB page */
