/* A guest kernel linked at virtual address 0, as kernels
 * written for Xen often are: no ENTRY, VIRT_BASE or PADDR_OFFSET note (Xen's
 * loader defaults them: e_entry, 0, 0), a FEATURES note in Xen's syntax
 * ('|' between names, '!' on a required one). Built with LEGACY, it has no
 * note at all but the old `__xen_guest` section string instead.
 *
 * Its first two pages hold known bytes: the loader must put nothing there
 * (start_info, tables and stack go after the image, as Xen puts them), and
 * such a kernel unmaps page 0 to catch NULL. */

#ifndef LEGACY
#define XEN_ELFNOTE(type, value) \
	.balign 4; .long 4; .long 2f - 1f; .long type; .asciz "Xen"; 1: value; 2: .balign 4

	.section .note.Xen, "a", @note
	XEN_ELFNOTE(6, .asciz "pvmmu")                  /* GUEST_OS */
	XEN_ELFNOTE(5, .asciz "xen-3.0")                /* XEN_VERSION */
	XEN_ELFNOTE(8, .asciz "generic")                /* LOADER */
	XEN_ELFNOTE(2, .quad hypercall_page)            /* HYPERCALL_PAGE */
	/* Both hypervisors have the required one; the others are optional. */
	XEN_ELFNOTE(10, .asciz "writable_descriptor_tables|!pae_pgdir_above_4gb|writable_page_tables")
#else
	/* Not allocated: the loaders read it from the section headers. */
	.section __xen_guest, "", @progbits
	.ascii "GUEST_OS=linux,XEN_VER=xen-3.0,VIRT_BASE=0x0,ELF_PADDR_OFFSET=0x0,"
	.ascii "HYPERCALL_PAGE=0x2,LOADER=generic,FEATURES=writable_page_tables|!pae_pgdir_above_4gb"
	.byte 0
#endif

	.section .text.low, "ax", @progbits
	.globl low_page0, low_page1, hypercall_page
low_page0:
	.fill 4096, 1, 0x5a
low_page1:
	.fill 4096, 1, 0xa5
hypercall_page:              /* page 2, filled by the hypervisor */
	.fill 4096, 1, 0xcc

	.section .text.entry, "ax", @progbits
	.globl low_start
low_start:
	mov %rsi, %rdi          /* start_info */
	mov %rsp, %rsi          /* the initial stack pointer */
	and $-16, %rsp
	call low_main
1:	ud2
	jmp 1b

	.section .note.GNU-stack, "", @progbits
