/* 64-bit entry points that C++ cannot express: the application processors'
 * landing from the trampoline, and moving the boot CPU onto a new stack. */
#include "cpu/selectors.h"

	.text

/* Reached from the trampoline (boot/trampoline.S) in 64-bit mode on the hypervisor's
 * page tables, with no stack. Each AP finds its own stack by its initial APIC
 * ID (CPUID.01H:EBX[31:24]), so an AP that starts late cannot take the stack
 * of the AP the boot CPU is starting now. An AP nobody expects halts. */
	.globl ap_entry64
ap_entry64:
	mov $1, %eax
	cpuid
	shr $24, %ebx
	lea ap_stack_tops(%rip), %rax
	mov (%rax, %rbx, 8), %rsp
	test %rsp, %rsp
	jz 1f
	mov %ebx, %edi
	pushq $0
	jmp ap_main
1:	cli
	hlt
	jmp 1b

/* switch_stack(top, fn): continues in fn() on the stack ending at top. */
	.globl switch_stack
switch_stack:
	mov %rdi, %rsp
	pushq $0
	jmp *%rsi

/* load_gdt_and_segments(const DescriptorPointer*): loads the GDT and reloads
 * CS (far return), DS, ES and SS from it. FS and GS keep their selectors so
 * their bases (IA32_GS_BASE: this CPU's PerCpu) stay as they are. */
	.globl load_gdt_and_segments
load_gdt_and_segments:
	lgdt (%rdi)
	pushq $HV_SEL_CS
	lea 1f(%rip), %rax
	pushq %rax
	lretq
1:	mov $HV_SEL_DS, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	ret

	.section .note.GNU-stack, "", @progbits
