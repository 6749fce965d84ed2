/* syscall-probe: a minimal Multiboot 1 kernel that qualifies an accelerator
 * (KVM, TCG) for pvmmu. It sets up what pvmmu-hv sets up for its
 * guests' hypercalls — Xen's selectors at GDT offset 0xe000 (0xe008 ring-0
 * code, 0xe02b/0xe033 ring-3 data/code), STAR, LSTAR, FMASK = 0x47700,
 * CSTAR = 0, EFER.SCE|NXE, CR0.WP, CR4.PAE|PGE and SMEP where CPUID has it,
 * a 64-bit TSS — and then, for each of a few PML4 slots, maps its own image
 * there (supervisor pages), calls into that alias in ring 0, and enters ring
 * 3 by IRETQ to a user page whose only instruction is SYSCALL, with LSTAR
 * pointing into the alias. Slot 261 is where pvmmu-hv's text lives.
 * Every exception is caught (IST1), printed and the next case run, so one
 * boot says which cases work: "probe: all ok" and isa-debug-exit 0 (QEMU
 * status 1), or "probe: FAILED" and 1 (status 3). tests/kvm/probe_test.sh
 * reads it. Built as ELF32 (QEMU's -kernel loads ELF32 Multiboot images). */

	.set COM1, 0x3f8
	.set EXIT_PORT, 0xf4
/* Xen's (and pvmmu-hv's) selectors lie at GDT offset 0xe000; built with
 * -DSEL_BASE=0 the same layout gives 0x08/0x10 and the ring-3 selectors
 * 0x2b/0x33 of a Linux host (the bisection in docs/boot.md). */
#ifndef SEL_BASE
#define SEL_BASE 0xe000
#endif
/* The other knobs of the bisection: -DPROBE_CR4=0x20 (PAE only, no PGE),
 * -DPROBE_NO_SMEP, -DPROBE_FMASK=0. */
#ifndef PROBE_CR4
#define PROBE_CR4 0xa0
#endif
#ifndef PROBE_FMASK
#define PROBE_FMASK 0x47700
#endif
	.set SEL_CS, SEL_BASE + 0x08
	.set SEL_DS, SEL_BASE + 0x10
	.set SEL_USER_DS, SEL_BASE + 0x2b
	.set SEL_USER_CS, SEL_BASE + 0x33
	.set SEL_TSS, SEL_BASE + 0x40
	.set USER_PAGE, 0x200000          /* a 2 MiB user page: code, then stack */
	.set USER_STACK, 0x3ff000

.macro PRINT s
	.pushsection .rodata
9:	.asciz "\s"
	.popsection
	lea 9b(%rip), %rsi
	call puts
.endm

	.text
	.code32
	.balign 4
mb_header:
	.long 0x1BADB002, 0, -0x1BADB002

	.globl _start
_start:
	cli
	mov $stack_top, %esp
	/* Identity map of 0-4 MiB with 2 MiB pages: 0-2 MiB (this image)
	 * supervisor, 2-4 MiB user. pdpt_alias maps the same 1 GiB without
	 * the U bit; a case points a PML4 slot at it. */
	mov $pdpt0, %eax
	or $7, %eax
	mov %eax, pml4
	mov $pd0, %eax
	or $7, %eax
	mov %eax, pdpt0
	mov $pd0, %eax
	or $3, %eax
	mov %eax, pdpt_alias
	movl $0x83, pd0
	movl $(USER_PAGE | 0x87), pd0 + 8
	mov %cr4, %eax
	or $PROBE_CR4, %eax             /* PAE | PGE */
	mov %eax, %cr4
	mov $pml4, %eax
	mov %eax, %cr3
	mov $0xc0000080, %ecx
	rdmsr
	or $0x901, %eax                 /* LME | NXE | SCE */
	wrmsr
	mov %cr0, %eax
	or $0x80010001, %eax            /* PG | WP | PE */
	mov %eax, %cr0
	lgdt gdt_ptr
	ljmp $SEL_CS, $long_mode

	.code64
long_mode:
	mov $SEL_DS, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	xor %eax, %eax
	mov %eax, %fs
	mov %eax, %gs
	mov $stack_top, %esp
	/* The TSS: RSP0 and IST1 on the exception stack. */
	lea tss(%rip), %rax
	mov %ax, gdt + 0x42
	shr $16, %rax
	mov %al, gdt + 0x44
	mov %ah, gdt + 0x47
	mov $exc_stack_top, %eax
	mov %rax, tss + 4
	mov %rax, tss + 0x24
	mov $SEL_TSS, %eax
	ltr %ax
	/* IDT: vectors 0-31, interrupt gates on IST1. */
	xor %ecx, %ecx
1:	mov stub_table(,%rcx,4), %eax
	mov %rcx, %rdx
	shl $4, %rdx
	lea idt(%rdx), %rdi
	mov %ax, (%rdi)
	movw $SEL_CS, 2(%rdi)
	movw $0x8e01, 4(%rdi)
	shr $16, %eax
	mov %ax, 6(%rdi)
	movl $0, 8(%rdi)
	inc %ecx
	cmp $32, %ecx
	jb 1b
	lidt idt_ptr
	/* Legacy PICs masked: no interrupt reaches ring 3 either. */
	mov $0xff, %al
	out %al, $0x21
	out %al, $0xa1
	/* SMEP where the CPU has it, as pvmmu-hv's syscall_init. */
	mov $7, %eax
	xor %ecx, %ecx
	cpuid
#ifdef PROBE_NO_SMEP
	xor %ebx, %ebx
#endif
	test $(1 << 7), %ebx
	jz 1f
	mov %cr4, %rax
	bts $20, %rax
	mov %rax, %cr4
1:	/* pvmmu-hv's syscall_init, LSTAR set per case. */
	mov $0xc0000081, %ecx
	xor %eax, %eax
	mov $(((SEL_BASE + 0x23) << 16) | SEL_CS), %edx
	wrmsr
	mov $0xc0000084, %ecx
	mov $PROBE_FMASK, %eax
	xor %edx, %edx
	wrmsr
	mov $0xc0000083, %ecx
	xor %eax, %eax
	wrmsr
	mov $0x174, %ecx
	wrmsr
	/* The user page: SYSCALL, then UD2 should it ever return. */
	mov $USER_PAGE, %edi
	movl $0x0b0f050f, (%rdi)

	PRINT "syscall-probe: STAR "
	mov $0xc0000081, %ecx
	call print_msr
	PRINT " FMASK "
	mov $0xc0000084, %ecx
	call print_msr
	PRINT " EFER "
	mov $0xc0000080, %ecx
	call print_msr
	PRINT " CR0 "
	mov %cr0, %rdi
	call puthex
	PRINT " CR4 "
	mov %cr4, %rdi
	call puthex
	PRINT "\r\ncpuid 0x40000000: "
	mov $0x40000000, %eax
	xor %ecx, %ecx
	cpuid
	mov %eax, %r8d
	sub $16, %rsp
	mov %ebx, (%rsp)
	mov %ecx, 4(%rsp)
	mov %edx, 8(%rsp)
	movb $0, 12(%rsp)
	mov %rsp, %rsi
	call puts
	add $16, %rsp
	PRINT " max "
	mov %r8, %rdi
	call puthex
	/* PVM's MSR_PVM_LINEAR_ADDRESS_RANGE (0x4b564df0): #GP elsewhere. */
	PRINT "\r\nMSR 0x4b564df0: "
	lea 1f(%rip), %rax
	mov %rax, resume(%rip)
	mov $0x4b564df0, %ecx
	rdmsr
	shl $32, %rdx
	or %rdx, %rax
	mov %rax, %rdi
	call puthex
1:	PRINT "\r\n"

	xor %r12d, %r12d                /* case index */
	xor %r14d, %r14d                /* failures */
next_case:
	movzwl slots(,%r12,2), %ebx
	cmp $0xffff, %ebx
	je done
	/* alias base = slot << 39, sign-extended */
	mov %rbx, %r13
	shl $39, %r13
	bt $47, %r13
	jnc 1f
	mov $0xffff000000000000, %rax
	or %rax, %r13
1:	test %ebx, %ebx
	jz 1f                           /* slot 0: the identity map itself */
	mov $pdpt_alias, %eax
	or $3, %eax
	mov %rax, pml4(,%rbx,8)
1:	mov %cr3, %rax
	mov %rax, %cr3
	PRINT "slot "
	mov %rbx, %rdi
	call puthex
	PRINT " ("
	mov %r13, %rdi
	call puthex
	PRINT "): ring-0 call "
	lea call_done(%rip), %rax
	mov %rax, resume(%rip)
	lea alias_ret(%rip), %rax
	add %r13, %rax
	call *%rax
	PRINT "ok"
call_done:
	PRINT "; SYSCALL from ring 3 "
	lea sc_done(%rip), %rax
	mov %rax, resume(%rip)
	lea syscall_target(%rip), %rax
	add %r13, %rax
	mov %rax, %rdx
	shr $32, %rdx
	mov $0xc0000082, %ecx
	wrmsr
	pushq $SEL_USER_DS
	pushq $USER_STACK
	pushq $2
	pushq $SEL_USER_CS
	pushq $USER_PAGE
	iretq

alias_ret:
	ret

	/* LSTAR: CPL 0 on the user's stack; leave the alias. */
syscall_target:
	mov $stack_top, %esp
	mov $sc_ok, %eax
	jmp *%rax
sc_ok:
	PRINT "ok"
	jmp case_end
sc_done:
	inc %r14d                       /* the exception was printed */
case_end:
	PRINT "\r\n"
	test %ebx, %ebx
	jz 1f
	movq $0, pml4(,%rbx,8)
1:	inc %r12d
	jmp next_case

done:
	test %r14d, %r14d
	jnz 1f
	PRINT "probe: all ok\r\n"
	xor %eax, %eax
	jmp 2f
1:	PRINT "probe: FAILED\r\n"
	mov $1, %eax
2:	mov $EXIT_PORT, %dx
	out %eax, %dx
3:	hlt
	jmp 3b

/* Every exception: print it, count it as a failure of the case, resume. */
.macro STUB vec, err
stub_\vec:
	.if \err == 0
	pushq $0
	.endif
	pushq $\vec
	jmp exc_common
.endm
	.irp v, 0,1,2,3,4,5,6,7,9,15,16,18,19,20,22,23,24,25,26,27,28,29,31
	STUB \v, 0
	.endr
	.irp v, 8,10,11,12,13,14,17,21,30
	STUB \v, 1
	.endr

exc_common:
	PRINT "exception: vector "
	mov (%rsp), %rdi
	call puthex
	PRINT " error code "
	mov 8(%rsp), %rdi
	call puthex
	PRINT " rip "
	mov 16(%rsp), %rdi
	call puthex
	PRINT " cs "
	mov 24(%rsp), %rdi
	call puthex
	PRINT " cr2 "
	mov %cr2, %rdi
	call puthex
	mov $stack_top, %esp
	mov resume(%rip), %rax
	jmp *%rax

print_msr:                              /* MSR %ecx */
	rdmsr
	shl $32, %rdx
	or %rdx, %rax
	mov %rax, %rdi
	jmp puthex

putc:
	push %rdx
	push %rax
	mov $(COM1 + 5), %dx
1:	in %dx, %al
	test $0x20, %al
	jz 1b
	pop %rax
	mov $COM1, %dx
	out %al, %dx
	pop %rdx
	ret

puts:
	push %rax
1:	lodsb
	test %al, %al
	jz 2f
	call putc
	jmp 1b
2:	pop %rax
	ret

puthex:                                 /* %rdi, as 0x..., no leading zeros */
	push %rax
	push %rcx
	push %rdx
	mov $'0', %al
	call putc
	mov $'x', %al
	call putc
	xor %edx, %edx
	mov $60, %ecx
1:	mov %rdi, %rax
	shr %cl, %rax
	and $0xf, %eax
	test %ecx, %ecx
	jz 2f
	test %edx, %edx
	jnz 2f
	test %eax, %eax
	jz 3f
2:	mov $1, %edx
	cmp $10, %al
	jb 4f
	add $('a' - 10 - '0'), %al
4:	add $'0', %al
	call putc
3:	sub $4, %ecx
	jns 1b
	pop %rdx
	pop %rcx
	pop %rax
	ret

	.section .rodata
	.balign 8
/* 0: the identity map (the lower half); 261: pvmmu-hv's image; 257/262 its
 * per-CPU areas and direct map; 272: the first slot of a PV guest kernel's
 * half; 508: near the top. */
slots:
	.short 0, 257, 261, 262, 272, 508, 0xffff
stub_table:
	.long stub_0, stub_1, stub_2, stub_3, stub_4, stub_5, stub_6, stub_7
	.long stub_8, stub_9, stub_10, stub_11, stub_12, stub_13, stub_14, stub_15
	.long stub_16, stub_17, stub_18, stub_19, stub_20, stub_21, stub_22, stub_23
	.long stub_24, stub_25, stub_26, stub_27, stub_28, stub_29, stub_30, stub_31
gdt_ptr:
	.short SEL_BASE + 0x4f
	.long gdt - SEL_BASE
idt_ptr:
	.short 32 * 16 - 1
	.long idt

	.data
	.balign 16
gdt:                                    /* selector 0xe000 + offset */
	.quad 0
	.quad 0x00af9a000000ffff        /* 0xe008 ring-0 code, 64-bit */
	.quad 0x00cf92000000ffff        /* 0xe010 ring-0 data */
	.quad 0
	.quad 0                         /* 0xe020: FLAT_RING3_CS32 left empty */
	.quad 0x00cff2000000ffff        /* 0xe028 ring-3 data */
	.quad 0x00affa000000ffff        /* 0xe030 ring-3 code, 64-bit */
	.quad 0x00cf9a000000ffff        /* 0xe038 ring-0 code, compatibility */
	.quad 0x0000890000000067, 0     /* 0xe040 64-bit TSS, base set at run time */
resume:
	.quad 0

	.bss
	.balign 4096
pml4:	.skip 4096
pdpt0:	.skip 4096
pdpt_alias: .skip 4096
pd0:	.skip 4096
idt:	.skip 4096
tss:	.skip 104
	.balign 16
	.skip 8192
stack_top:
	.skip 8192
exc_stack_top:

	.section .note.GNU-stack, "", @progbits
