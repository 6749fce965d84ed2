/* The first instructions of a pvmmu guest kernel on bare metal (docs/design.md §6,
 * docs/abi.md "Bare-metal guest ABI"): the Xen ELF notes the hypervisor's
 * loader reads, the hypercall page it fills, and the entry point. The
 * hypervisor enters in ring 3, 64-bit, interrupts on, RSP at the top of a
 * boot stack and RSI at start_info (Xen's x86-64 PV start of day). */

#define XEN_ELFNOTE(type, value) \
	.balign 4; .long 4; .long 2f - 1f; .long type; .asciz "Xen"; 1: value; 2: .balign 4

	.section .note.Xen, "a", @note
	XEN_ELFNOTE(6, .asciz "pvmmu")                  /* GUEST_OS */
	XEN_ELFNOTE(5, .asciz "xen-3.0")                /* XEN_VERSION */
	XEN_ELFNOTE(8, .asciz "generic")                /* LOADER: Xen's, for a kernel not Linux */
	XEN_ELFNOTE(3, .quad XENPV_VIRT_BASE)           /* VIRT_BASE */
	XEN_ELFNOTE(4, .quad XENPV_VIRT_BASE)           /* PADDR_OFFSET: segments at p_paddr = p_vaddr */
	XEN_ELFNOTE(1, .quad _start)                    /* ENTRY */
	XEN_ELFNOTE(2, .quad hypercall_page)            /* HYPERCALL_PAGE */
	/* Optional, as Xen's loader knows no such name; the guest library asks
	 * XENVER_get_features at run time. */
	XEN_ELFNOTE(10, .asciz "mmu_pt_update_preserve_ad") /* FEATURES */

	/* Filled by the hypervisor: 32 bytes per hypercall number. */
	.section .text.hypercall_page, "ax", @progbits
	.balign 4096
	.globl hypercall_page
hypercall_page:
	.fill 4096, 1, 0xcc

	.section .text.entry, "ax", @progbits
	.globl _start
_start:
	mov %rsi, %rdi          /* start_info */
	mov %rsp, %rsi          /* the top of the boot structures */
	and $-16, %rsp
	call xenpv_start
1:	ud2                     /* xenpv_start never returns */
	jmp 1b

/* xenpv_switch_stack(top, fn): continues in fn() on the stack ending at top. */
	.globl xenpv_switch_stack
xenpv_switch_stack:
	mov %rdi, %rsp
	pushq $0
	jmp *%rsi

	.section .note.GNU-stack, "", @progbits
