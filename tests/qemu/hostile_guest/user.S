/* The hostile guest's way into its user mode (user.cc; docs/abi.md §10
 * "Guest user mode").
 *
 * hostile_user_enter(rip, rsp, rflags), called by hostile_probe (traps.S):
 * the iret hypercall to FLAT_RING3_CS64 (RPL 3: user mode) at rip on the
 * user stack rsp, with RDI, RSI, RDX, RCX from hostile_user_args (RCX by
 * the frame). The snippet there ends in a RET to hostile_user_exit, whose
 * SYSCALL in user mode reaches the syscall callback hostile_user_syscall
 * (on the kernel stack from stack_switch), which goes back to the probe's
 * resume point; an exception goes to the trap table's handler, which does
 * the same (traps.cc). A handler may also resume the snippet in kernel mode
 * past its instruction: its RET then reaches hostile_user_exit in kernel
 * mode, where the SYSCALL is a hypercall no one has (-ENOSYS). */

	.text
	.globl hostile_user_enter, hostile_user_exit, hostile_user_syscall
	.hidden hostile_user_enter, hostile_user_exit, hostile_user_syscall
hostile_user_enter:
	pushq $0xe02b                   /* ss: FLAT_RING3_SS64 */
	pushq %rsi                      /* rsp */
	pushq %rdx                      /* rflags */
	pushq $0xe033                   /* cs: FLAT_RING3_CS64, RPL 3 */
	pushq %rdi                      /* rip */
	pushq $0                        /* iret_context.flags */
	mov hostile_user_args(%rip), %rdi
	mov hostile_user_args+8(%rip), %rsi
	mov hostile_user_args+16(%rip), %rdx
	mov hostile_user_args+24(%rip), %rcx
	jmp *hostile_iret_via(%rip)     /* pushes RCX, R11, RAX */

hostile_user_exit:
	mov $0x7fff0000, %eax           /* no hypercall's number */
	syscall
	jmp hostile_probe_resume

hostile_user_syscall:
	mov %rsp, hostile_user_cb_rsp(%rip)
	jmp hostile_probe_resume

	.bss
	.balign 8
	.globl hostile_user_args, hostile_user_cb_rsp
	.hidden hostile_user_args, hostile_user_cb_rsp
hostile_user_args:	.quad 0, 0, 0, 0
hostile_user_cb_rsp:	.quad 0

	.section .note.GNU-stack, "", @progbits
