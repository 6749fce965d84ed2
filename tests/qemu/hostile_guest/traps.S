/* The hostile guest's exception handlers and its probe trampoline
 * (docs/security.md §7.10).
 *
 * hostile_probe(fn, a0, a1, a2, a3) calls the snippet fn(a0, a1, a2, a3)
 * with the callee-saved registers kept on its own stack and that stack's
 * RSP in hostile_resume_rsp. A snippet either returns, or traps; the
 * handler then comes back to hostile_probe_resume on that RSP — through the
 * iret hypercall, or by jumping there itself — or skips the faulting
 * instruction (traps.cc decides). So a snippet may clobber any register,
 * the direction flag and its stack below the probe's.
 *
 * Handlers: three stubs per vector, one per way of coming back (variant 0,
 * 1, 2), 16 bytes apart: hostile_trap_stubs + 16 * (32 * variant + vector).
 * The hypervisor enters one with Xen's bounce frame at RSP (RCX, R11,
 * [error code], RIP, CS, RFLAGS, RSP, SS); the stub pushes its vector and
 * variant, hostile_trap_common the other registers, and traps.cc's
 * hostile_trap() edits the frame and says how to leave: 0 by the iret
 * hypercall (the frame, completed with its flags word, is struct
 * iret_context once the stub pushed RAX, R11, RCX), 1 straight to the
 * probe's resume point. */

	.text

	.globl hostile_trap_stubs
	.hidden hostile_trap_stubs
	.balign 16
hostile_trap_stubs:
	.set variant, 0
	.rept 3
	.set vector, 0
	.rept 32
	.balign 16
	pushq $vector
	pushq $variant
	jmp hostile_trap_common
	.set vector, vector + 1
	.endr
	.set variant, variant + 1
	.endr
	.globl hostile_trap_stubs_end
	.hidden hostile_trap_stubs_end
hostile_trap_stubs_end:

hostile_trap_common:
	pushq %rax
	pushq %rbx
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rbp
	pushq %r8
	pushq %r9
	pushq %r10
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	mov %rsp, %rdi                  /* struct TrapRegs (traps.cc) */
	mov %rsp, %rbx
	and $-16, %rsp                  /* the ABI's alignment, whatever the frame's */
	cld                             /* the interrupted code may have set DF */
	call hostile_trap
	mov %rbx, %rsp
	test %eax, %eax
	jnz 2f
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r10
	popq %r9
	popq %r8
	popq %rbp
	popq %rdi
	popq %rsi
	popq %rdx
	popq %rbx
	popq %rax
	add $16, %rsp                   /* variant, vector */
	popq %rcx
	popq %r11
	testb $1, hostile_drop_error(%rip)
	jz 1f
	lea 8(%rsp), %rsp               /* the error code */
1:	pushq $0                        /* iret_context.flags */
	jmp *hostile_iret_via(%rip)     /* the page's stub or hostile_iret_raw */
2:	mov hostile_resume_rsp(%rip), %rsp
	jmp hostile_probe_resume

/* The iret hypercall without the hypercall page: the stub's own bytes. */
	.globl hostile_iret_raw
	.hidden hostile_iret_raw
hostile_iret_raw:
	pushq %rcx
	pushq %r11
	pushq %rax
	mov $23, %eax                   /* __HYPERVISOR_iret */
	syscall
	ud2

/* uint64_t hostile_probe(fn, a0, a1, a2, a3): fn's RAX, or whatever RAX
 * holds when a handler comes back. */
	.globl hostile_probe, hostile_probe_resume
	.hidden hostile_probe, hostile_probe_resume
hostile_probe:
	pushq %rbx
	pushq %rbp
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
	mov %rsp, hostile_resume_rsp(%rip)
	mov %rdi, %rax
	mov %rsi, %rdi
	mov %rdx, %rsi
	mov %rcx, %rdx
	mov %r8, %rcx
	call *%rax
hostile_probe_resume:
	mov hostile_resume_rsp(%rip), %rsp
	cld
	/* TF, DF and AC off whatever the snippet or an iret left (AC would
	 * make unaligned accesses fault if the hypervisor set CR0.AM). */
	pushfq
	andq $~0x40500, (%rsp)
	popfq
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %rbp
	popq %rbx
	ret

	.bss
	.balign 8
	.globl hostile_resume_rsp, hostile_iret_via, hostile_drop_error
	.hidden hostile_resume_rsp, hostile_iret_via, hostile_drop_error
hostile_resume_rsp:	.quad 0
hostile_iret_via:	.quad 0
hostile_drop_error:	.byte 0

	.section .note.GNU-stack, "", @progbits
