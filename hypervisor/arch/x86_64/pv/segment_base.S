/* SEGBASE_GS_USER_SEL's selector load (pv/segment_base.cc), in assembly
 * because it runs with the PerCpu parked outside IA32_GS_BASE. */
#include "cpu/cpu_bits.h"
#include "cpu/extable.h"

	.text

/* uint64_t load_gs_user_sel(uint16_t sel): SEGBASE_GS_USER_SEL's load, with
 * IF clear (pv/segment_base.cc). Loads sel into %gs, or the null selector
 * where the CPU refuses it (#GP, #NP: the fixup, as Xen's); returns the base
 * the descriptor gave, 0 for null. IA32_KERNEL_GS_BASE (the guest kernel's
 * base) is the same on the way out as on the way in.
 *
 * The load writes IA32_GS_BASE. So that an NMI, #MC or the load's own fault
 * finds this CPU's PerCpu at every instruction here, it is parked in
 * IA32_KERNEL_GS_BASE (SWAPGS) for as long as IA32_GS_BASE may hold another
 * base: before the first SWAPGS and after the second, IA32_GS_BASE is the
 * PerCpu; between them, IA32_KERNEL_GS_BASE is, and trap_from_hypervisor
 * (cpu/trap_entry.S), which finds IA32_GS_BASE not this stack's PerCpu, swaps it
 * in and marks the entry; trap_return swaps back. Such an entry resumes only
 * for the load's fault, at its fixup (cpu/traps.cc). Nothing reads through %gs
 * here. The guest kernel's base goes back into IA32_KERNEL_GS_BASE last,
 * with the PerCpu already in IA32_GS_BASE. */
	.globl load_gs_user_sel, load_gs_user_sel_load
load_gs_user_sel:
	mov $MSR_KERNEL_GS_BASE, %ecx
	rdmsr
	shl $32, %rdx
	or %rax, %rdx
	mov %rdx, %rsi                  /* the guest kernel's base */
	movzwl %di, %eax
	swapgs                          /* PerCpu parked in IA32_KERNEL_GS_BASE */
load_gs_user_sel_load:
	mov %ax, %gs
	EXTABLE_ENTRY(load_gs_user_sel_load, .Lgs_fixup)
.Lgs_loaded:
	xor %edi, %edi                  /* a null selector's base: 0 */
	mov %gs, %eax
	test $0xfffc, %eax
	jz .Lgs_null
	mov $MSR_GS_BASE, %ecx
	rdmsr
	shl $32, %rdx
	or %rax, %rdx
	mov %rdx, %rdi                  /* the descriptor's base */
.Lgs_null:
	swapgs                          /* the PerCpu back in IA32_GS_BASE */
	mov $MSR_KERNEL_GS_BASE, %ecx
	mov %esi, %eax
	mov %rsi, %rdx
	shr $32, %rdx
	wrmsr
	mov %rdi, %rax
	ret
.Lgs_fixup:
	xor %eax, %eax
	mov %ax, %gs
	jmp .Lgs_loaded

	.section .note.GNU-stack, "", @progbits
