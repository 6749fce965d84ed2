/* Interrupt and exception entry stubs. Every vector gets the same frame
 * (cpu/traps.h TrapFrame): the CPU's push (SS, RSP, RFLAGS, CS, RIP), an
 * error code (the CPU's, or 0 for vectors without one: "Exception and Interrupt
 * Reference", SDM Vol. 3A), the vector number, then the general registers.
 * In 64-bit mode the CPU aligns RSP to 16 before its push, and the stub adds
 * 22 words, so the call to trap_dispatch sees the ABI's 16-byte alignment. */

#include "cpu/cpu_bits.h"
#include "cpu/entry_defs.h"
#include "cpu/smap_asm.h"
#include "mm/layout.h"

	.text

/* The general registers, below the vector (cpu/traps.h TrapFrame, whose
 * RAX, RDI, RSI, RDX, R10, R8, R9 are a hypercall's frame in place). */
.macro SAVE_GPRS
	pushq %r9
	pushq %r8
	pushq %r10
	pushq %rdx
	pushq %rsi
	pushq %rdi
	pushq %rax
	pushq %rbx
	pushq %rcx
	pushq %rbp
	pushq %r11
	pushq %r12
	pushq %r13
	pushq %r14
	pushq %r15
.endm

.macro TRAP_STUB vec, cpu_pushes_error
	.balign 16
trap_stub_\vec:
	.if \cpu_pushes_error == 0
	pushq $0
	.endif
	pushq $\vec
	jmp trap_common
.endm

/* Vectors 8, 10-14, 17, 21, 29, 30 push an error code. */
	TRAP_STUB 0, 0
/* selftest=dbentry only (boot/selftest.cc): an INT $1 that ends where the #DB stub
 * starts, so the frame it pushes on the #DB IST stack is the one the CPU
 * pushes there for a #DB held over a guest's INT1 (RIP: the stub, ring 0). */
	.balign 16
	.skip 14, 0xcc
	.globl debug_entry_selftest_int1
debug_entry_selftest_int1:
	int $1
	TRAP_STUB 1, 0
	TRAP_STUB 2, 0
	TRAP_STUB 3, 0
	TRAP_STUB 4, 0
	TRAP_STUB 5, 0
	TRAP_STUB 6, 0
	TRAP_STUB 7, 0
	TRAP_STUB 8, 1
	TRAP_STUB 9, 0
	TRAP_STUB 10, 1
	TRAP_STUB 11, 1
	TRAP_STUB 12, 1
	TRAP_STUB 13, 1
	TRAP_STUB 14, 1
	TRAP_STUB 15, 0
	TRAP_STUB 16, 0
	TRAP_STUB 17, 1
	TRAP_STUB 18, 0
	TRAP_STUB 19, 0
	TRAP_STUB 20, 0
	TRAP_STUB 21, 1
	TRAP_STUB 22, 0
	TRAP_STUB 23, 0
	TRAP_STUB 24, 0
	TRAP_STUB 25, 0
	TRAP_STUB 26, 0
	TRAP_STUB 27, 0
	TRAP_STUB 28, 0
	TRAP_STUB 29, 1
	TRAP_STUB 30, 1
	TRAP_STUB 31, 0
/* Interrupt vectors the platform uses (cpu/traps.h). */
	TRAP_STUB 0xf0, 0               /* TLB shootdown IPI */
	TRAP_STUB 0xf1, 0               /* kick: a vCPU to run, wake or deliver to */
	TRAP_STUB 0xf2, 0               /* LAPIC timer */
	TRAP_STUB 0xff, 0               /* LAPIC spurious interrupt */

/* From ring 3 (the saved CS has RPL 3) %gs holds the guest's base: swap in
 * this CPU's PerCpu (IA32_KERNEL_GS_BASE) before any C++ runs, and back on
 * the way out. The frame's CS is 24 bytes up: vector, error code, RIP. */
trap_common:
	testb $3, 24(%rsp)
	jz trap_from_hypervisor
	swapgs
	/* No load through %gs may run ahead on a mispredicted branch with the
	 * guest's base (CVE-2019-1125, "SWAPGS"): a fence on each path. */
	lfence
	jmp trap_save

/* From ring 0 %gs is the hypervisor's, except on the short paths between a
 * ring change and its SWAPGS: a stub and trap_common up to the SWAPGS above,
 * syscall_entry's SWAPGS, trap_return's two ways from their SWAPGS to their
 * IRETQ (to ring 3, and to ring 0 from an entry on the guest's %gs), and this
 * code up to its own SWAPGS; and inside load_gs_user_sel (pv/segment_base.S),
 * which parks the PerCpu in IA32_KERNEL_GS_BASE while it loads a guest's
 * selector into %gs. IF is clear on all of them, but an NMI or #MC can
 * arrive there, the IRETQ faults when the CPU refuses the guest's frame, and
 * the load when it refuses the selector. On every one of them, at every
 * instruction, one of IA32_GS_BASE and IA32_KERNEL_GS_BASE holds the PerCpu:
 * whoever writes IA32_GS_BASE in ring 0 keeps that so. The saved CS cannot tell those apart, and the guest chose its %gs
 * base, so nothing here reads through %gs: IA32_GS_BASE must be the PerCpu
 * of the area the stack lies in (cpu/percpu.h; IST stacks too), or, on a stack
 * outside every area (the boot CPU's, before its area exists), some element
 * of g_cpus. Otherwise the hypervisor's base is swapped in and the frame's
 * vector marked VECTOR_GUEST_GS; trap_dispatch returns to ring 0 from such
 * an entry only for a guest's held-over #DB or a refused parked %gs load
 * (cpu/traps.cc), and trap_return then swaps the guest's base back; after
 * a refused return to the guest, bounced, it goes on to ring 3 with the
 * mark cleared. */
trap_from_hypervisor:
	pushq %rax
	pushq %rcx
	pushq %rdx
	mov $MSR_GS_BASE, %ecx
	rdmsr
	shl $32, %rdx
	or %rdx, %rax
	lea g_cpus(%rip), %rdx
	sub %rdx, %rax                  /* IA32_GS_BASE as an offset into g_cpus */
	mov %rsp, %rcx
	movabs $HV_PERCPU_VIRT, %rdx
	sub %rdx, %rcx
	shr $HV_PERCPU_SHIFT, %rcx      /* the area this stack lies in */
	cmp $PERCPU_MAX_CPUS, %rcx
	jae 2f
	imul $PERCPU_SIZE, %rcx, %rcx   /* the offset of that CPU's PerCpu */
	cmp %rcx, %rax
	je 1f
	jmp 3f
2:	cmp $(PERCPU_MAX_CPUS * PERCPU_SIZE), %rax
	jae 3f
	test $(PERCPU_SIZE - 1), %eax
	jz 1f
3:	swapgs
	orq $VECTOR_GUEST_GS, 24(%rsp)  /* the vector, above the three pushes */
1:	lfence                          /* both ways, as above */
	popq %rdx
	popq %rcx
	popq %rax
/* syscall32_entry joins here with its frame built and the hypervisor's %gs. */
	.globl trap_save
trap_save:
	SAVE_GPRS
	mov %rsp, %rdi
	cld
	/* EFLAGS.AC as the interrupted code left it: a guest may set it in ring
	 * 3, and an interrupt or exception keeps it, which would open every user
	 * page to the hypervisor under SMAP. The IRETQ restores it (guest_copy's
	 * window, a guest's own AC). SYSCALL's entry has it clear (IA32_FMASK). */
	SMAP_CLOSE
	call trap_dispatch
/* The one way back: from traps, from syscall_entry, and the first entry of a
 * vCPU (guest_enter), each with %rsp at a TrapFrame. */
	.globl trap_return
trap_return:
	popq %r15
	popq %r14
	popq %r13
	popq %r12
	popq %r11
	popq %rbp
	popq %rcx
	popq %rbx
	popq %rax
	popq %rdi
	popq %rsi
	popq %rdx
	popq %r10
	popq %r8
	popq %r9
	testb $3, 24(%rsp)              /* the frame's CS, above vector, error code, RIP */
	jz 3f
	add $16, %rsp                   /* vector and error code */
	swapgs                          /* back to ring 3: the guest's %gs again */
/* A fault here (the CPU refuses the frame) comes in on the guest's %gs:
 * trap_from_hypervisor repairs it, trap_dispatch crashes the domain or
 * bounces the fault. No frame back to ring 3 carries VECTOR_GUEST_GS
 * (cpu/traps.cc clears it on the one entry that goes on to ring 3). */
	.globl trap_return_iretq
trap_return_iretq:
	iretq
3:	testq $VECTOR_GUEST_GS, (%rsp)  /* an entry that found the guest's %gs and */
	jz 4f                           /* resumes (cpu/traps.cc): the guest's again */
	swapgs
4:	add $16, %rsp
	iretq

/* syscall_entry (pv/syscall_entry.S) joins here with its frame built and the
 * hypervisor's %gs: a SYSCALL from the guest's 64-bit mode, to syscall_trap
 * (pv/hypercall.cc). SYSCALL's entry has DF and AC clear (IA32_FMASK,
 * cpu/entry_defs.h): neither CLD nor SMAP_CLOSE. */
	.globl syscall_save
syscall_save:
	SAVE_GPRS
	mov %rsp, %rdi
	call syscall_trap
	jmp trap_return

/* The stubs' addresses, for cpu/descriptors.cc: 32 exceptions, then the four interrupts. */
	.section .rodata
	.balign 8
	.globl trap_stubs
trap_stubs:
	.irp v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad trap_stub_\v
	.endr
	.quad trap_stub_0xf0
	.quad trap_stub_0xf1
	.quad trap_stub_0xf2
	.quad trap_stub_0xff

	.section .note.GNU-stack, "", @progbits
