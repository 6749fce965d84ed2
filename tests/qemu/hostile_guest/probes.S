/* The instructions the hostile guest executes (docs/security.md §7.10):
 * each a snippet called by hostile_probe (traps.S) with its arguments in
 * RDI, RSI, RDX, RCX. Three labels each: the entry, NAME_f where the
 * instruction under test starts, NAME_e where it ends (a handler may skip
 * it, traps.cc). The snippets that make hypercalls of their own (raw
 * SYSCALL, boundary SYSCALLs, the iret hypercall) take the number and
 * arguments from hostile_raw_nr and hostile_raw_args. instructions.cc says
 * what each may raise. */

.macro SNIP name
	.text
	.globl \name, \name\()_f, \name\()_e
	.hidden \name, \name\()_f, \name\()_e
	.type \name, @function
\name:
.endm
.macro AT name
\name\()_f:
.endm
.macro PAST name
\name\()_e:
.endm
/* A snippet of one instruction and a return. */
.macro ONE name, insn:vararg
	SNIP \name
	AT \name
	\insn
	PAST \name
	ret
.endm
.macro BYTES name, b:vararg
	SNIP \name
	AT \name
	.byte \b
	PAST \name
	ret
.endm
/* The raw hypercall registers: RAX and RDI, RSI, RDX, R10, R8, R9. */
.macro RAW_REGS
	mov hostile_raw_nr(%rip), %rax
	mov hostile_raw_args+0(%rip), %rdi
	mov hostile_raw_args+8(%rip), %rsi
	mov hostile_raw_args+16(%rip), %rdx
	mov hostile_raw_args+24(%rip), %r10
	mov hostile_raw_args+32(%rip), %r8
	mov hostile_raw_args+40(%rip), %r9
.endm

/* --- exceptions by themselves --------------------------------------------- */
	ONE hs_ud2, ud2
	BYTES hs_ud0, 0x0f, 0xff, 0xc0
	BYTES hs_into, 0xce                  /* invalid in 64-bit mode */
	ONE hs_int3, int3
	BYTES hs_int3_cd, 0xcd, 0x03         /* INT 3 in its two-byte form */
	BYTES hs_int1, 0xf1                  /* ICEBP */
	BYTES hs_aaa, 0x37                   /* invalid in 64-bit mode */
	BYTES hs_pop_ss, 0x17                /* invalid in 64-bit mode */
	BYTES hs_lock_nop, 0xf0, 0x90
	BYTES hs_too_long, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x90

/* --- privileged instructions ------------------------------------------------ */
	ONE hs_cli, cli
	ONE hs_sti, sti
	ONE hs_hlt, hlt
	ONE hs_clts, clts
	ONE hs_wbinvd, wbinvd
	ONE hs_invd, invd
	ONE hs_swapgs, swapgs
	BYTES hs_sysretq, 0x48, 0x0f, 0x07
	ONE hs_sysenter, sysenter
	BYTES hs_sysexit, 0x0f, 0x35
	ONE hs_rsm, rsm
	BYTES hs_getsec, 0x0f, 0x37
	BYTES hs_vmcall, 0x0f, 0x01, 0xc1
	BYTES hs_vmmcall, 0x0f, 0x01, 0xd9
	ONE hs_invlpg, invlpg (%rdi)
	ONE hs_lgdt, lgdt (%rdi)
	ONE hs_lidt, lidt (%rdi)
	ONE hs_lldt, lldt %di
	ONE hs_ltr, ltr %di
	ONE hs_lmsw, lmsw %di
	ONE hs_rd_cr0, mov %cr0, %rax
	ONE hs_rd_cr2, mov %cr2, %rax
	ONE hs_rd_cr3, mov %cr3, %rax
	ONE hs_rd_cr4, mov %cr4, %rax
	ONE hs_rd_cr8, mov %cr8, %rax
	ONE hs_wr_cr0, mov %rdi, %cr0
	ONE hs_wr_cr3, mov %rdi, %cr3
	ONE hs_wr_cr4, mov %rdi, %cr4
	ONE hs_wr_cr8, mov %rdi, %cr8
	ONE hs_rd_dr7, mov %dr7, %rax
	ONE hs_wr_dr7, mov %rdi, %dr7
	ONE hs_wr_dr0, mov %rdi, %dr0
SNIP hs_rdmsr
	mov %edi, %ecx
AT hs_rdmsr
	rdmsr
PAST hs_rdmsr
	ret
SNIP hs_wrmsr
	mov %edi, %ecx
	mov %esi, %eax
AT hs_wrmsr
	wrmsr                           /* EDX is the third argument already */
PAST hs_wrmsr
	ret
SNIP hs_rdpmc
	mov %edi, %ecx
AT hs_rdpmc
	rdpmc
PAST hs_rdpmc
	ret
SNIP hs_xsetbv
	xor %ecx, %ecx
	mov %edi, %eax
AT hs_xsetbv
	xsetbv
PAST hs_xsetbv
	ret
SNIP hs_monitor
	mov %rdi, %rax
	xor %ecx, %ecx
	xor %edx, %edx
AT hs_monitor
	monitor
PAST hs_monitor
	ret
SNIP hs_mwait
	xor %eax, %eax
	xor %ecx, %ecx
AT hs_mwait
	mwait
PAST hs_mwait
	ret
/* Ports: the TSS has no I/O bitmap and IOPL is 0. 0xf4 is QEMU's
 * isa-debug-exit, which would end the run if it were reachable. */
	ONE hs_inb_dx, inb %dx, %al
	ONE hs_inw_dx, inw %dx, %ax
	ONE hs_inl_dx, inl %dx, %eax
	ONE hs_outb_dx, outb %al, %dx
	ONE hs_outw_dx, outw %ax, %dx
	ONE hs_outl_dx, outl %eax, %dx
	ONE hs_inb_80, inb $0x80, %al
	ONE hs_outb_f4, outb %al, $0xf4
	ONE hs_outl_f4, outl %eax, $0xf4
	ONE hs_insb, insb
	ONE hs_rep_outsb, rep outsb

/* --- unprivileged, allowed or not depending on the CPU's settings -------- */
	ONE hs_sldt, sldt %ax
	ONE hs_str, str %ax
	ONE hs_smsw, smsw %rax
	ONE hs_sgdt, sgdt (%rdi)
	ONE hs_sidt, sidt (%rdi)
	ONE hs_rdtscp, rdtscp
SNIP hs_xgetbv
	xor %ecx, %ecx
AT hs_xgetbv
	xgetbv
PAST hs_xgetbv
	ret
SNIP hs_cpuid
	mov %edi, %eax
	xor %ecx, %ecx
	push %rbx
AT hs_cpuid
	cpuid
PAST hs_cpuid
	pop %rbx
	ret
	ONE hs_wrgsbase, wrgsbase %rdi
	ONE hs_wrfsbase, wrfsbase %rdi
	ONE hs_rdgsbase, rdgsbase %rax
	ONE hs_fninit, fninit
	ONE hs_xorps, xorps %xmm0, %xmm0
	ONE hs_vxorps, vxorps %ymm0, %ymm0, %ymm0
	ONE hs_lar, lar %di, %eax
	ONE hs_lsl, lsl %di, %eax
	ONE hs_verr, verr %di
	ONE hs_verw, verw %di
/* POPF cannot clear IF nor raise IOPL in ring 3: RAX is RFLAGS after it. */
SNIP hs_popf_iopl
	pushfq
	orq $0x3000, (%rsp)
	andq $~0x200, (%rsp)
AT hs_popf_iopl
	popfq
PAST hs_popf_iopl
	pushfq
	popq %rax
	ret

/* --- arithmetic ----------------------------------------------------------- */
SNIP hs_div0
	xor %edx, %edx
	xor %esi, %esi
	mov $1, %eax
AT hs_div0
	div %rsi
PAST hs_div0
	ret
SNIP hs_idiv_overflow
	movabs $0x8000000000000000, %rax
	cqo
	mov $-1, %rsi
AT hs_idiv_overflow
	idiv %rsi
PAST hs_idiv_overflow
	ret
SNIP hs_div8_overflow
	mov $0xffff, %eax
	mov $1, %esi
AT hs_div8_overflow
	div %sil
PAST hs_div8_overflow
	ret

/* --- memory: the address in RDI (and RSI for copies) ----------------------- */
	ONE hs_load1, movb (%rdi), %al
	ONE hs_load2, movw (%rdi), %ax
	ONE hs_load4, movl (%rdi), %eax
	ONE hs_load8, movq (%rdi), %rax
	ONE hs_load16, movdqu (%rdi), %xmm0
SNIP hs_push_mem                        /* the push lands on the probe's stack */
	mov %rsp, %rax
AT hs_push_mem
	pushq (%rdi)
PAST hs_push_mem
	mov %rax, %rsp
	ret
	ONE hs_clflush, clflush (%rdi)
	ONE hs_prefetch, prefetcht0 (%rdi)
	ONE hs_store1, movb %sil, (%rdi)
	ONE hs_store2, movw %si, (%rdi)
	ONE hs_store4, movl %esi, (%rdi)
	ONE hs_store8, movq %rsi, (%rdi)
	ONE hs_xchg8, xchgq %rsi, (%rdi)
SNIP hs_cmpxchg8
	mov %rdx, %rax
AT hs_cmpxchg8
	lock cmpxchgq %rsi, (%rdi)
PAST hs_cmpxchg8
	ret
SNIP hs_cmpxchg16b
	push %rbx
	mov %rdx, %rax
	mov %rsi, %rbx
	mov %rsi, %rcx
AT hs_cmpxchg16b
	lock cmpxchg16b (%rdi)
PAST hs_cmpxchg16b
	pop %rbx
	ret
/* Copies of RDX bytes from RSI to RDI, forwards and backwards. */
SNIP hs_rep_movsb
	mov %rdx, %rcx
AT hs_rep_movsb
	rep movsb
PAST hs_rep_movsb
	ret
SNIP hs_rep_movsb_back
	mov %rdx, %rcx
	std
AT hs_rep_movsb_back
	rep movsb
PAST hs_rep_movsb_back
	cld
	ret
SNIP hs_rep_stosq
	mov %rdx, %rcx
	mov %rsi, %rax
AT hs_rep_stosq
	rep stosq
PAST hs_rep_stosq
	ret

/* --- control transfers to the address in RDI -------------------------------- */
	ONE hs_jmp, jmp *%rdi
	ONE hs_call, call *%rdi
SNIP hs_ret
	push %rdi
AT hs_ret
	ret
PAST hs_ret
	ud2
/* A far return to RSI:RDI, and IRETQ to RSI:RDI with stack selector RDX and
 * RFLAGS | RCX; on success they land where RDI says (the probe's resume point
 * when traps.cc picks it). */
SNIP hs_lret
	push %rsi
	push %rdi
AT hs_lret
	lretq
PAST hs_lret
	ud2
SNIP hs_iretq
	mov %rsp, %rax
	push %rdx
	push %rax
	pushfq
	or %rcx, (%rsp)
	push %rsi
	push %rdi
AT hs_iretq
	iretq
PAST hs_iretq
	ud2

/* --- segment registers: the selector in RDI (traps.cc reloads them all) --- */
	ONE hs_mov_ds, mov %di, %ds
	ONE hs_mov_es, mov %di, %es
	ONE hs_mov_fs, mov %di, %fs
	ONE hs_mov_gs, mov %di, %gs
	ONE hs_mov_ss, mov %di, %ss
/* MOV SS's interrupt shadow over INT3 and over SYSCALL. */
SNIP hs_ss_int3
	mov %ss, %eax
	mov %eax, %ss
AT hs_ss_int3
	int3
PAST hs_ss_int3
	ret
SNIP hs_ss_syscall
	RAW_REGS
	mov %ss, %r11d
	mov %r11d, %ss
AT hs_ss_syscall
	syscall
PAST hs_ss_syscall
	ret

/* --- hypercalls without the hypercall page ---------------------------------- */
SNIP hs_raw_syscall
	RAW_REGS
AT hs_raw_syscall
	syscall
PAST hs_raw_syscall
	ret
/* A REX-prefixed SYSCALL: a continuation re-executes only its last 2 bytes. */
SNIP hs_raw_syscall_rex
	RAW_REGS
AT hs_raw_syscall_rex
	.byte 0x48, 0x0f, 0x05
PAST hs_raw_syscall_rex
	ret
/* A SYSCALL somewhere else: at RDI, where setup.cc and instructions.cc put
 * one at a page or canonical boundary. It comes back past its 2 bytes, to a
 * RET when there is one (on the probe's return address), else it traps. */
SNIP hs_boundary
	mov %rdi, %r11
	RAW_REGS
AT hs_boundary
	jmp *%r11
PAST hs_boundary
	ud2
/* Single-stepping: TF on, then RAW_REGS and a SYSCALL under it; traps.cc
 * keeps TF for a number of #DB and then clears it. */
SNIP hs_tf_syscall
	pushfq
	orq $0x100, (%rsp)
	popfq
	RAW_REGS
AT hs_tf_syscall
	syscall
PAST hs_tf_syscall
	nop
	ret
/* The same with the SYSCALL in a MOV SS shadow: the single-step trap of the
 * MOV SS is held over the next instruction (SDM Vol. 3A "Masking Exceptions
 * and Interrupts When Switching Stacks"), so on a CPU it is pending when
 * SYSCALL enters ring 0, whatever FMASK does to TF (CVE-2018-8897's class). */
SNIP hs_tf_ss_syscall
	pushfq
	orq $0x100, (%rsp)
	popfq
	RAW_REGS
	mov %ss, %r11d
	mov %r11d, %ss
AT hs_tf_ss_syscall
	syscall
PAST hs_tf_ss_syscall
	nop
	ret
/* The iret hypercall from here: struct iret_context with RIP = RCX, CS =
 * RSI, RFLAGS = RDI, RSP = here, SS = RDX; RAX and the argument registers
 * from hostile_raw_*, for an iret that lands on a SYSCALL. */
SNIP hs_iret_hypercall
	mov %rsp, %rax
	push %rdx
	push %rax
	push %rdi
	push %rsi
	push %rcx
	pushq $0
	RAW_REGS
AT hs_iret_hypercall
	jmp *hostile_iret_via(%rip)
PAST hs_iret_hypercall
	ud2

/* --- INT n for every n: hostile_int_n + 4 * n, each `int $n; ret` --------- */
	.text
	.balign 4
	.globl hostile_int_n
	.hidden hostile_int_n
hostile_int_n:
	.set n, 0
	.rept 256
	.balign 4
	.byte 0xcd, n
	ret
	.set n, n + 1
	.endr

	.bss
	.balign 8
	.globl hostile_raw_nr, hostile_raw_args
	.hidden hostile_raw_nr, hostile_raw_args
hostile_raw_nr:		.quad 0
hostile_raw_args:	.zero 48

	.section .note.GNU-stack, "", @progbits
