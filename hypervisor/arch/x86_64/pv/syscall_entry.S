/* SYSCALL from ring 3: a hypercall from the guest's kernel mode (docs/abi.md
 * "Bare-metal guest ABI"; the guest reaches it through the hypercall page's
 * stubs, pv/loader.cc), the guest's own system call from its user mode
 * (bounced to its syscall callback, cpu/traps.cc), and SYSCALL from
 * compatibility mode.
 *
 * SYSCALL leaves RIP in RCX, RFLAGS in R11, CS/SS from STAR, RSP untouched,
 * and IF cleared by IA32_FMASK ("SYSCALL" in SDM Vol. 2B). The entry swaps
 * in the hypervisor's %gs, takes this CPU's stack (the same top as TSS.RSP0,
 * so a hypercall and a trap from ring 3 leave their frame at one place) and
 * builds the TrapFrame the trap path builds, with vector VECTOR_SYSCALL,
 * then saves the registers and returns through the trap path's code.
 * The way back is trap_return's IRETQ, never SYSRET: IRETQ takes any frame
 * the hypervisor checked, SYSRET with a non-canonical RCX would fault in
 * ring 0 on the guest's stack. */
#include "cpu/entry_defs.h"
#include "cpu/selectors.h"

	.text

/* The frame an interrupt from ring 3 would have pushed, built by hand
 * (SYSCALL pushes nothing and saves RIP in RCX, RFLAGS in R11): CS as given,
 * then the vector, and on to `save` in cpu/trap_entry.S: syscall_save
 * (syscall_trap) for a 64-bit SYSCALL, trap_save (trap_dispatch) else. */
	.macro syscall_frame cs, vector, save
	swapgs
	mov %rsp, %gs:PERCPU_GUEST_RSP
	mov %gs:PERCPU_STACK_TOP, %rsp
	pushq $HV_SEL_GUEST_DS          /* ss */
	pushq %gs:PERCPU_GUEST_RSP      /* rsp */
	pushq %r11                      /* rflags */
	pushq $\cs                      /* cs */
	pushq %rcx                      /* rip */
	pushq $0                        /* error code */
	pushq $\vector
	jmp \save
	.endm

	.globl syscall_entry
syscall_entry:                          /* syscall_trap, pv/hypercall.cc */
	syscall_frame HV_SEL_GUEST_CS64, VECTOR_SYSCALL, syscall_save

/* SYSCALL from compatibility mode (IA32_CSTAR): never a hypercall (the
 * hypercall page is 64-bit code). The same frame, with Xen's FLAT_RING3_CS32
 * as its CS (SYSCALL saves no selector; Xen's frame says the same) and
 * vector VECTOR_SYSCALL32: trap_dispatch bounces it to the guest's syscall32
 * callback, or #UD (guest_syscall32, cpu/traps.cc). */
	.globl syscall32_entry
syscall32_entry:
	syscall_frame HV_SEL_GUEST_CS32, VECTOR_SYSCALL32, trap_save

	.section .note.GNU-stack, "", @progbits
