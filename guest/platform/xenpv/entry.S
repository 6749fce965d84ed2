/* The guest kernel's low-level paths on bare metal (docs/abi.md §10):
 * the page-fault entry the trap table names, and guest memory accesses
 * that may fault, each with a fixup the fault handler resumes at when the
 * library's handler gives up (the access then returns false). */

	.text

/* #PF, as the hypervisor bounces it: from the lowest address RCX, R11,
 * error code, RIP, CS, RFLAGS, RSP, SS. RCX and R11 go back to their
 * registers; the rest is a hardware-like frame with the error code on top.
 * xenpv_fault(regs) may change the saved RIP (fixup). The way out is the
 * iret hypercall: its stub pushes RCX, R11, RAX on (flags, RIP, CS, RFLAGS,
 * RSP, SS), so the error code's slot becomes flags = 0. */
	.globl xenpv_page_fault
xenpv_page_fault:
	pop %rcx
	pop %r11
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, %rdi
	sub $8, %rsp                    /* 15 pushes on a 16-aligned frame */
	cld
	call xenpv_fault
	add $8, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	movq $0, (%rsp)
	jmp hypercall_page + 23 * 32    /* __HYPERVISOR_iret */

/* bool xenpv_load(uint64_t va, uint64_t* out) */
	.globl xenpv_load
xenpv_load:
1:	mov (%rdi), %rax
	mov %rax, (%rsi)
	mov $1, %eax
	ret

/* bool xenpv_store(uint64_t va, uint64_t val) */
	.globl xenpv_store
xenpv_store:
2:	mov %rsi, (%rdi)
	mov $1, %eax
	ret

/* int xenpv_cmpxchg(uint64_t va, uint64_t* expected, uint64_t desired):
 * 0 faulted, 1 compared unequal (*expected = the value seen), 3 swapped. */
	.globl xenpv_cmpxchg
xenpv_cmpxchg:
	mov (%rsi), %rax
3:	lock cmpxchg %rdx, (%rdi)
	mov %rax, (%rsi)
	setz %al
	movzbl %al, %eax
	lea 1(, %rax, 2), %eax
	ret

/* bool xenpv_fetch(uint64_t va): calls va, where the caller has put a `ret`
 * (0xC3), and returns 1 when it returned. An instruction fetch at va that
 * faults has no extable entry (the faulting RIP is va itself): xenpv_fault
 * knows the probe by its return address, xenpv_fetch_ret, on top of the
 * stack, and resumes there with RAX = 0, as if va had returned 0. */
	.globl xenpv_fetch, xenpv_fetch_ret
xenpv_fetch:
	mov $1, %eax
	call *%rdi
xenpv_fetch_ret:
	ret

fixup:
	xor %eax, %eax
	ret

/* (faulting instruction, fixup) pairs, read by xenpv_fault. */
	.section .rodata
	.balign 8
	.globl xenpv_extable, xenpv_extable_end
xenpv_extable:
	.quad 1b, fixup
	.quad 2b, fixup
	.quad 3b, fixup
xenpv_extable_end:

	.section .note.GNU-stack, "", @progbits
