/* The hostile guest's sealed page (docs/security.md §7.10): a hypercall, and
 * the check of the guest's own image after it, in a page of their own that
 * setup.cc maps read-only in the physmap and no random request names
 * (args.cc own_data_gpfn). No write the hypervisor makes for the guest
 * reaches it, so when one lands across the guest's text — a pointer drawn
 * wrong, or a stray write — this code still runs after the hypercall that
 * made it, and names the operation before the code it broke runs: it uses
 * no other page of the image, keeps what it needs in registers the
 * hypervisor keeps (RBX, R12-R15), and makes its own SYSCALLs (the
 * hypercall page is one of the pages it checks).
 *
 * Listed first among the guest's sources, it follows the hypercall page and
 * the entry code in the image (guest/platform/xenpv/xenpv.ld): a write that
 * runs up through the physmap from below stops here, at a frame it cannot
 * write, having reached only those two pages.
 *
 * long hostile_sealed_hypercall(a0, a1, a2, a3, a4, nr, op): the hypercall
 * nr(a0 .. a4), as pvmmu::xenpv::hypercall makes it; then the hash of the
 * image, this page left out, against hostile_sealed_ref. When it differs:
 * a line naming operation op, then hostile_image_broken(op) (setup.cc),
 * which says more if the code it needs is whole, and fails the run.
 *
 * uint64_t hostile_sealed_hash(void): FNV-1a's multiply over the 64-bit
 * words of the text, read-only data and notes, from the hypercall page to
 * the start of .data, this page left out.
 */

	.section .text.hostile_sealed, "ax", @progbits
	.balign 4096
	.globl hostile_sealed_page, hostile_sealed_hypercall, hostile_sealed_hash, hostile_sealed_ref
	.hidden hostile_sealed_page, hostile_sealed_hypercall, hostile_sealed_hash, hostile_sealed_ref
hostile_sealed_page:

hostile_sealed_hash:
	lea hypercall_page(%rip), %rsi
	lea __init_array_start(%rip), %rdi
	lea hostile_sealed_page(%rip), %rcx
	movabs $0xcbf29ce484222325, %rax
	movabs $0x100000001b3, %rdx
1:	cmp %rdi, %rsi
	jae 3f
	cmp %rcx, %rsi
	jne 2f
	add $4096, %rsi                 /* this page: read-only, and it holds the reference */
	jmp 1b
2:	xor (%rsi), %rax
	imul %rdx, %rax
	add $8, %rsi
	jmp 1b
3:	ret

hostile_sealed_hypercall:
	push %rbx
	push %r12
	push %r13
	push %r14
	push %r15
	mov 48(%rsp), %r12              /* op: the seventh argument */
	mov %rcx, %r10                  /* a3 in R10, as Xen's x86-64 PV ABI has it */
	mov %r9, %rax
	syscall
	mov %rax, %r13
	call hostile_sealed_hash
	cmp hostile_sealed_ref(%rip), %rax
	jne 4f
	mov %r13, %rax
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbx
	ret

4:	sub $64, %rsp                   /* the op's digits, backwards from 32(%rsp) */
	lea 32(%rsp), %r15
	mov %r12, %rax
	mov $10, %r14d
5:	xor %edx, %edx
	div %r14
	add $'0', %dl
	dec %r15
	mov %dl, (%r15)
	test %rax, %rax
	jnz 5b
	lea prefix(%rip), %rdx
	mov $prefix_end - prefix, %esi
	call console_write
	mov %r15, %rdx
	lea 32(%rsp), %rsi
	sub %r15, %rsi
	call console_write
	lea suffix(%rip), %rdx
	mov $suffix_end - suffix, %esi
	call console_write
	mov %r12, %rdi
	call hostile_image_broken       /* does not come back */
6:	ud2
	jmp 6b

/* console_io(CONSOLEIO_write, RSI bytes, RDX) */
console_write:
	xor %edi, %edi
	mov $18, %eax                   /* __HYPERVISOR_console_io */
	syscall
	ret

prefix:	.ascii "hostile: FAILURE at op "
prefix_end:
suffix:	.ascii ": the guest's own text or read-only data changed by this operation's hypercall (sealed check)\n"
suffix_end:

	.balign 8
hostile_sealed_ref:	.quad 0

	.balign 4096                    /* nothing else shares the page */

	.section .note.GNU-stack, "", @progbits
