/* The way in: the Multiboot 1 header and the 32-bit entry point.
 *
 * A Multiboot 1 loader (QEMU -kernel) enters at _start32 in 32-bit protected
 * mode, paging off, flat segments, interrupts off, no stack, EAX = 0x2BADB002,
 * EBX = physical address of the boot information (Multiboot spec §3.2); a
 * Multiboot 2 loader (GRUB's multiboot2; its header is boot/multiboot2_header.S)
 * the same with EAX = 0x36D76289. This
 * code checks that, checks for long mode and NX, builds boot page tables that
 * map the first GiB three times (identity, image slot, direct-map slot),
 * enables PAE, IA-32e mode, NX and paging ("Initializing IA-32e Mode", SDM
 * Vol. 3A) and far-jumps to 64-bit code, which moves to the image's virtual
 * address and calls bsp_main. The .boot section is linked at its physical
 * address; everything else at HV_IMAGE_VIRT + physical (hv.ld.S). */
#include "boot/boot_defs.h"
#include "cpu/cpu_bits.h"
#include "cpu/selectors.h"
#include "mm/layout.h"

/* Physical address of an image symbol, for code that runs before paging. */
#define PHYS(sym) ((sym) - HV_IMAGE_VIRT)

	.section .multiboot, "a"
	.balign 4
mb1_header:
	.long MB1_HEADER_MAGIC
	.long MB1_FLAGS
	.long -(MB1_HEADER_MAGIC + MB1_FLAGS)   /* the three words sum to 0 */
	/* The a.out kludge (flag bit 16): physical addresses from hv.ld.S.
	 * header_addr is this header's own; the loader copies the file from the
	 * header's offset minus (header_addr - load_addr) up to load_end_addr,
	 * zeroes up to bss_end_addr and jumps to entry_addr. */
	.long mb1_header
	.long __hv_load_phys
	.long __hv_load_end_phys
	.long __hv_bss_end_phys
	.long _start32

	.section .boot.text, "ax"
	.code32
	.globl _start32
_start32:
	cli
	cld
	mov $PHYS(boot_stack_top), %esp
	mov %eax, %esi                  /* the loader's magic, for bsp_main */
	cmp $MB1_BOOT_MAGIC, %eax
	je 1f
	cmp $MB2_BOOT_MAGIC, %eax
	jne .Lno_multiboot
1:	mov %ebx, %edi                  /* info address, for bsp_main */
	/* The TSC as the hypervisor starts, for the boot-time line (boot/time.cc). */
	rdtsc
	mov %eax, PHYS(hv_entry_tsc)
	mov %edx, PHYS(hv_entry_tsc) + 4

	/* Long mode and NX (CPUID 8000_0001H EDX bits 29, 20); the hypervisor's
	 * W^X rule needs NX, so no NX is no boot. */
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb .Lno_long_mode
	mov $0x80000001, %eax
	cpuid
	test $CPUID_EXT_LM, %edx
	jz .Lno_long_mode
	test $CPUID_EXT_NX, %edx
	jz .Lno_nx

	/* boot_l2: 512 2 MiB pages = the first GiB. Writable and executable:
	 * these tables live only until paging_build replaces them. */
	mov $PHYS(boot_l2), %ebx
	xor %ecx, %ecx
1:	mov %ecx, %eax
	shl $21, %eax
	or $(PTE_P | PTE_RW | PTE_PS), %eax
	mov %eax, (%ebx, %ecx, 8)
	movl $0, 4(%ebx, %ecx, 8)
	inc %ecx
	cmp $512, %ecx
	jne 1b
	/* One L3 whose entry 0 is that GiB, linked from L4 slot 0 (identity, for
	 * this code), the image slot and the direct-map slot (mm/layout.h). */
	mov $PHYS(boot_l3), %ebx
	movl $(PHYS(boot_l2) + PTE_P + PTE_RW), (%ebx)
	mov $PHYS(boot_l4), %ebx
	movl $(PHYS(boot_l3) + PTE_P + PTE_RW), (%ebx)
	movl $(PHYS(boot_l3) + PTE_P + PTE_RW), HV_SLOT_IMAGE * 8(%ebx)
	movl $(PHYS(boot_l3) + PTE_P + PTE_RW), HV_SLOT_DIRECTMAP * 8(%ebx)

	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $PHYS(boot_l4), %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $(EFER_LME | EFER_NXE), %eax
	wrmsr
	mov %cr0, %eax
	/* PG activates IA-32e mode (EFER.LMA). AM, as Xen's boot CR0 has it:
	 * ring 3 (every guest, kernel and user mode) gets alignment checking
	 * when it sets EFLAGS.AC (pv/traps.cc, deliver_to). */
	or $(CR0_PG | CR0_WP | CR0_AM), %eax
	mov %eax, %cr0

	lgdt boot_gdt_ptr32
	ljmp $HV_SEL_CS, $.Lentry64

/* Prints the NUL-terminated string at %esi on COM1, then ends QEMU through
 * isa-debug-exit (or halts, on hardware). No stack needed. */
.Lfail:
	mov $(COM1_PORT + 5), %dx       /* line status: bit 5 = transmitter empty */
	in %dx, %al
	test $0x20, %al
	jz .Lfail
	lodsb
	test %al, %al
	jz 2f
	mov $COM1_PORT, %dx
	out %al, %dx
	jmp .Lfail
2:	mov $DEBUG_EXIT_PORT, %dx
	mov $HV_EXIT_FAILURE, %eax
	out %eax, %dx
3:	hlt
	jmp 3b

.Lno_multiboot:
	mov $.Lmsg_no_multiboot, %esi
	jmp .Lfail
.Lno_long_mode:
	mov $.Lmsg_no_long_mode, %esi
	jmp .Lfail
.Lno_nx:
	mov $.Lmsg_no_nx, %esi
	jmp .Lfail

	.code64
.Lentry64:
	mov $HV_SEL_DS, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	/* The boot GDT again, now at its direct-map alias, which the final page
	 * tables keep: it serves until each CPU loads its own window. */
	lgdt boot_gdt_ptr64(%rip)
	mov %edi, %edi                  /* upper halves are undefined after the mode switch */
	mov %esi, %esi
	movabs $boot_stack_top, %rsp
	pushq $0                        /* no return address: ends backtraces */
	movabs $bsp_main, %rax
	jmp *%rax

	.section .boot.data, "a"
	/* Only Xen's hypervisor selectors (cpu/selectors.h), at their offsets from a
	 * base HV_GDT_RESERVED_OFFSET below the table: the same selector values
	 * serve from the first far jump on, so the IDT needs no second version.
	 * Nothing ever loads a selector below 0xe000 from this table. */
	.balign 16
boot_gdt:
	.quad 0                         /* 0xe000: unused */
	.quad 0x00af9b000000ffff        /* 0xe008 HV_SEL_CS: ring 0, 64-bit, accessed */
	.quad 0x00cf93000000ffff        /* 0xe010 HV_SEL_DS: ring 0 data, accessed */
boot_gdt_end:
	.balign 4
	.word 0
boot_gdt_ptr32:
	.word HV_GDT_RESERVED_OFFSET + (boot_gdt_end - boot_gdt) - 1
	.long boot_gdt - HV_GDT_RESERVED_OFFSET
	.balign 8
	.word 0, 0, 0
boot_gdt_ptr64:
	.word HV_GDT_RESERVED_OFFSET + (boot_gdt_end - boot_gdt) - 1
	.quad HV_DIRECTMAP_VIRT + boot_gdt - HV_GDT_RESERVED_OFFSET

.Lmsg_no_multiboot:
	.asciz "pvmmu-hv: not started by a Multiboot 1 or 2 loader (bad magic in %eax)\r\n"
.Lmsg_no_long_mode:
	.asciz "pvmmu-hv: this CPU has no 64-bit long mode\r\n"
.Lmsg_no_nx:
	.asciz "pvmmu-hv: this CPU has no NX (execute-disable) bit\r\n"

	/* Boot page tables and the boot CPU's first stack, in the image's bss
	 * (zeroed by the loader up to bss_end_addr). */
	.section .bss.boot, "aw", @nobits
	.balign 4096
	.globl boot_l4
boot_l4:	.skip 4096
boot_l3:	.skip 4096
boot_l2:	.skip 4096
	.balign 16
boot_stack:	.skip HV_BOOT_STACK_SIZE
boot_stack_top:

	.data
	.balign 8
	.globl hv_entry_tsc
hv_entry_tsc:	.quad 0

	.section .note.GNU-stack, "", @progbits
