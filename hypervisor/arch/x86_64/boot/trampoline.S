/* The application processors' start-up code. boot/smp.cc copies the bytes between
 * tramp_start and tramp_end to HV_TRAMPOLINE_PHYS and fills tramp_cr3; a
 * start-up IPI with vector HV_TRAMPOLINE_PHYS >> 12 then starts the AP here in
 * real mode with CS = vector << 8, IP = 0 ("MP Initialization Protocol
 * Algorithm", SDM Vol. 3A). It goes to protected mode, enables PAE, IA-32e
 * mode, NX, write protection and paging on the hypervisor's tables (which map
 * this page at its physical address until every AP is up), and jumps to
 * ap_entry64 in the image. The bytes are never executed in place, so they sit
 * in read-only data; every address is computed relative to the copy (T()). */
#include "cpu/cpu_bits.h"
#include "mm/layout.h"

#define T(x) ((x) - tramp_start + HV_TRAMPOLINE_PHYS)

/* A small GDT of its own: the AP loads its real GDT window in ap_main. */
#define TRAMP_CS32 0x08
#define TRAMP_DS   0x10
#define TRAMP_CS64 0x18

	.section .rodata.trampoline, "a"
	.balign 16
	.globl tramp_start, tramp_end, tramp_cr3, tramp_started
	.code16
tramp_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	/* Tells the boot CPU that the first start-up IPI arrived, so it sends no
	 * second one (boot/smp.cc). */
	lock incl (tramp_started - tramp_start)
	lgdtl (tramp_gdt_ptr - tramp_start)
	mov %cr0, %eax
	or $CR0_PE, %eax
	mov %eax, %cr0
	ljmpl $TRAMP_CS32, $T(.Lprot32)

	.code32
.Lprot32:
	mov $TRAMP_DS, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov T(tramp_cr3), %eax          /* below 4 GiB: mm/paging.cc allocates it there */
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $(EFER_LME | EFER_NXE), %eax /* NXE before paging: the tables use bit 63 */
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_WP | CR0_AM), %eax   /* as the boot CPU (boot/boot32.S) */
	mov %eax, %cr0
	ljmp $TRAMP_CS64, $T(.Llong64)

	.code64
.Llong64:
	movabs $ap_entry64, %rax
	jmp *%rax

	/* Accessed bits preset (0x9b/0x93): this page is mapped read-only once
	 * paging is on, and the CPU would write them on the far jump. */
	.balign 8
.Ltramp_gdt:
	.quad 0
	.quad 0x00cf9b000000ffff        /* 0x08: 32-bit code */
	.quad 0x00cf93000000ffff        /* 0x10: data */
	.quad 0x00af9b000000ffff        /* 0x18: 64-bit code */
.Ltramp_gdt_end:
	.balign 4
	.word 0
tramp_gdt_ptr:
	.word .Ltramp_gdt_end - .Ltramp_gdt - 1
	.long T(.Ltramp_gdt)
tramp_cr3:
	.long 0
tramp_started:
	.long 0
tramp_end:

	.section .note.GNU-stack, "", @progbits
