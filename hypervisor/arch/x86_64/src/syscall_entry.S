/* Hypercall entry from ring 3 by SYSCALL (SPEC §5; the guest reaches it
 * through the hypercall page's stubs, guest_loader.cc), the first entry of a
 * vCPU, and the copy routine for guest memory with its fault fixup.
 *
 * SYSCALL leaves RIP in RCX, RFLAGS in R11, CS/SS from STAR, RSP untouched,
 * and IF cleared by IA32_FMASK ("SYSCALL" in SDM Vol. 2B). The entry swaps
 * in the hypervisor's %gs, takes this CPU's stack (the same top as TSS.RSP0,
 * so a hypercall and a trap from ring 3 leave their frame at one place) and
 * builds the TrapFrame the trap path builds, with vector VECTOR_SYSCALL,
 * then saves the registers and returns through the trap path's code.
 * The way back is trap_return's IRETQ, never SYSRET: IRETQ takes any frame
 * the hypervisor checked, SYSRET with a non-canonical RCX would fault in
 * ring 0 on the guest's stack. */
#include "arch/entry_defs.h"
#include "arch/selectors.h"
#include "arch/smap_asm.h"

	.text

	.globl syscall_entry
syscall_entry:
	swapgs
	mov %rsp, %gs:PERCPU_GUEST_RSP
	mov %gs:PERCPU_STACK_TOP, %rsp
	pushq $HV_SEL_GUEST_DS          /* ss */
	pushq %gs:PERCPU_GUEST_RSP      /* rsp */
	pushq %r11                      /* rflags */
	pushq $HV_SEL_GUEST_CS64        /* cs */
	pushq %rcx                      /* rip */
	pushq $0                        /* error code */
	pushq $VECTOR_SYSCALL           /* trap_dispatch calls syscall_dispatch */
	jmp trap_save

/* SYSCALL from compatibility mode (IA32_CSTAR): never a hypercall (the
 * hypercall page is 64-bit code). The same frame, with Xen's FLAT_RING3_CS32
 * as its CS (SYSCALL saves no selector; Xen's frame says the same) and
 * vector VECTOR_SYSCALL32: trap_dispatch bounces it to the guest's syscall32
 * callback, or #UD (guest_syscall32, traps.cc). */
	.globl syscall32_entry
syscall32_entry:
	swapgs
	mov %rsp, %gs:PERCPU_GUEST_RSP
	mov %gs:PERCPU_STACK_TOP, %rsp
	pushq $HV_SEL_GUEST_DS          /* ss */
	pushq %gs:PERCPU_GUEST_RSP      /* rsp */
	pushq %r11                      /* rflags */
	pushq $HV_SEL_GUEST_CS32        /* cs */
	pushq %rcx                      /* rip */
	pushq $0                        /* error code */
	pushq $VECTOR_SYSCALL32
	jmp trap_save

/* guest_enter(const TrapFrame* start): the first entry into a vCPU. The
 * frame is copied to the top of this CPU's stack, where ring 3 enters and
 * traps leave theirs, and left through trap_return. Interrupts are off. */
	.globl guest_enter
guest_enter:
	mov %rdi, %rsi
	mov %gs:PERCPU_STACK_TOP, %rdi
	sub $TRAP_FRAME_SIZE, %rdi
	mov %rdi, %rsp
	mov $(TRAP_FRAME_SIZE / 8), %ecx
	rep movsq
	jmp trap_return

/* size_t guest_copy(void* dst, const void* src, size_t n): copies n bytes
 * where one side is guest memory (already checked to lie in the guest's
 * part of the address space) and returns how many were NOT copied. Words
 * first, then the n % 8 bytes left: one REP MOVSQ iteration per 8 bytes, not
 * eight REP MOVSB ones (the same on a CPU with fast strings, but under an
 * emulator each iteration is a load and a store; requests are copied here).
 * A fault on the copy (not present, or a write to a read-only page under
 * CR0.WP) resumes at its instruction's fixup through guest_copy_extable
 * (traps.cc), with RCX the words or bytes left ("REP/REPE/..." in SDM Vol. 2B)
 * and RDX still n. The guest's pages are user pages (its kernel runs in ring
 * 3): under SMAP this is the one window that opens them (STAC), closed on
 * every way out (CLAC; the fault's entry closed it too, and its IRETQ to the
 * fixup restored the AC it found set). */
	.globl guest_copy
guest_copy:
	SMAP_OPEN
	mov %rdx, %rcx
	shr $3, %rcx
1:	rep movsq
	mov %edx, %ecx
	and $7, %ecx
2:	rep movsb
	xor %eax, %eax
	jmp 5f
3:	and $7, %edx			/* words left, and the tail not started */
	lea (%rdx,%rcx,8), %rax
	jmp 5f
4:	mov %rcx, %rax
5:	SMAP_CLOSE
	ret

/* int guest_probe_read(const void* va, bool open): reads the byte at va, a
 * guest address, with the SMAP window open (STAC) or closed; 0 if it read, 1
 * if it faulted. Only for the boot self-test "selftest=smap"
 * (cpu_features.cc), which shows that a read outside guest_copy faults. */
	.globl guest_probe_read
guest_probe_read:
	test %esi, %esi
	jz 6f
	SMAP_OPEN
6:	xor %eax, %eax
7:	movb (%rdi), %cl
	jmp 9f
8:	mov $1, %eax
9:	SMAP_CLOSE
	ret

/* uint16_t load_gs_or_null(uint16_t sel): loads sel into %gs, or the null
 * selector where the CPU refuses it (#GP, #NP: its fixup, as Xen's
 * SEGBASE_GS_USER_SEL does); returns what %gs holds. The load replaces
 * IA32_GS_BASE with the descriptor's base: the caller has interrupts off and
 * puts its PerCpu back before anything reads through %gs. */
	.globl load_gs_or_null
load_gs_or_null:
	movzwl %di, %eax
10:	mov %ax, %gs
	ret
11:	xor %eax, %eax
	mov %ax, %gs
	ret

	.section .rodata
	.balign 8
	.globl guest_copy_extable, guest_copy_extable_end
guest_copy_extable:			/* (faulting instruction, its fixup) */
	.quad 1b, 3b
	.quad 2b, 4b
	.quad 7b, 8b
	.quad 10b, 11b
guest_copy_extable_end:

	.section .note.GNU-stack, "", @progbits
