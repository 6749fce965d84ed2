/* The Multiboot 2 header (Multiboot2 Specification 2.0, §3.1), next to the
 * Multiboot 1 header of boot/boot32.S in the same ELF64 file: GRUB's `multiboot2`
 * finds this one, QEMU's -kernel the other, and both enter at _start32, which
 * tells them apart by the magic in %eax.
 *
 * The address tag makes GRUB load the image exactly as a Multiboot 1 loader
 * does with the a.out kludge — one flat copy of [load_addr, load_end_addr)
 * from the file, bss zeroed up to bss_end_addr — so the two protocols put the
 * same bytes at the same physical addresses and the ELF headers (whose entry
 * and segments GRUB would otherwise use, debug sections included) play no
 * part, so the entry comes from the entry address tag (§3.1.6).
 * tests/qemu/check_image.py checks that both headers say the same. */
#include "boot/boot_defs.h"

#define MB2_ARCH_I386        0   /* §3.1.2: "32-bit (protected) mode of i386" */

/* Header tags besides boot/boot_defs.h's end, address and entry tags. */
#define MB2_TAG_INFO_REQUEST 1   /* §3.1.4 */
#define MB2_TAG_MODULE_ALIGN 6   /* §3.1.11 */
#define MB2_TAG_OPTIONAL     1   /* flags bit 0 (§3.1.3) */

/* Boot information tags the information requests (§3.1.4) ask for (§3.6):
 * command line, boot loader name, modules, basic memory, memory map. */
#define MB2_INFO_CMDLINE     1
#define MB2_INFO_LOADER_NAME 2
#define MB2_INFO_MODULE      3
#define MB2_INFO_BASIC_MEM   4
#define MB2_INFO_MMAP        6

	.section .multiboot2, "a"
	.balign 8                       /* §3.1.1: 64-bit aligned, in the first 32 KiB */
mb2_header:
	.long MB2_HEADER_MAGIC
	.long MB2_ARCH_I386
	.long mb2_header_end - mb2_header
	.long -(MB2_HEADER_MAGIC + MB2_ARCH_I386 + (mb2_header_end - mb2_header))

	/* Tags are 8-byte aligned; a tag's size does not count the padding.
	 * Flags 0: required, a loader that cannot honour one must refuse; bit 0
	 * set: optional. What the hypervisor cannot run without is required;
	 * the loader's name, and basic memory (used only without a memory map),
	 * are not. */
	.balign 8
1:	.short MB2_TAG_INFO_REQUEST, 0
	.long 2f - 1b
	.long MB2_INFO_CMDLINE, MB2_INFO_MODULE, MB2_INFO_MMAP
2:
	.balign 8
1:	.short MB2_TAG_INFO_REQUEST, MB2_TAG_OPTIONAL
	.long 2f - 1b
	.long MB2_INFO_LOADER_NAME, MB2_INFO_BASIC_MEM
2:
	.balign 8
1:	.short MB2_TAG_ADDRESS, 0
	.long 2f - 1b
	.long mb2_header                /* header_addr: where this header lands */
	.long __hv_load_phys            /* load_addr */
	.long __hv_load_end_phys        /* load_end_addr */
	.long __hv_bss_end_phys         /* bss_end_addr */
2:
	.balign 8
1:	.short MB2_TAG_ENTRY, 0
	.long 2f - 1b
	.long _start32                  /* 32-bit protected mode, paging off */
2:
	.balign 8
1:	.short MB2_TAG_MODULE_ALIGN, 0  /* modules page aligned (guest ELF files) */
	.long 2f - 1b
2:
	.balign 8
1:	.short MB2_TAG_END, 0
	.long 2f - 1b
2:
mb2_header_end:

	.section .note.GNU-stack, "", @progbits
