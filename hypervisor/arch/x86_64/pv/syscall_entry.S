/* Hypercall entry from ring 3 by SYSCALL (SPEC §5; the guest reaches it
 * through the hypercall page's stubs, pv/loader.cc), the first entry of a
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
#include "cpu/cpu_bits.h"
#include "cpu/entry_defs.h"
#include "cpu/selectors.h"
#include "cpu/smap_asm.h"

	.text

/* The frame an interrupt from ring 3 would have pushed, built by hand
 * (SYSCALL pushes nothing and saves RIP in RCX, RFLAGS in R11): CS as given,
 * then the vector trap_dispatch goes by. */
	.macro syscall_frame cs, vector
	swapgs
	mov %rsp, %gs:PERCPU_GUEST_RSP
	mov %gs:PERCPU_STACK_TOP, %rsp
	pushq $HV_SEL_GUEST_DS          /* ss */
	pushq %gs:PERCPU_GUEST_RSP      /* rsp */
	pushq %r11                      /* rflags */
	pushq $\cs                      /* cs */
	pushq %rcx                      /* rip */
	pushq $0                        /* error code */
	pushq $\vector
	jmp trap_save
	.endm

	.globl syscall_entry
syscall_entry:                          /* trap_dispatch calls syscall_dispatch */
	syscall_frame HV_SEL_GUEST_CS64, VECTOR_SYSCALL

/* SYSCALL from compatibility mode (IA32_CSTAR): never a hypercall (the
 * hypercall page is 64-bit code). The same frame, with Xen's FLAT_RING3_CS32
 * as its CS (SYSCALL saves no selector; Xen's frame says the same) and
 * vector VECTOR_SYSCALL32: trap_dispatch bounces it to the guest's syscall32
 * callback, or #UD (guest_syscall32, cpu/traps.cc). */
	.globl syscall32_entry
syscall32_entry:
	syscall_frame HV_SEL_GUEST_CS32, VECTOR_SYSCALL32

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
 * (cpu/traps.cc), with RCX the words or bytes left ("REP/REPE/..." in SDM Vol. 2B)
 * and RDX still n. The guest's pages are user pages (its kernel runs in ring
 * 3): under SMAP this is the one window that opens them (STAC), closed on
 * every way out (CLAC; the fault's entry closed it too, and its IRETQ to the
 * fixup restored the AC it found set). */
	.globl guest_copy
guest_copy:
	SMAP_OPEN
	mov %rdx, %rcx
	shr $3, %rcx
.Lcopy_words:
	rep movsq
	mov %edx, %ecx
	and $7, %ecx
.Lcopy_bytes:
	rep movsb
	xor %eax, %eax
	jmp .Lcopy_out
.Lcopy_words_fixup:
	and $7, %edx			/* words left, and the tail not started */
	lea (%rdx,%rcx,8), %rax
	jmp .Lcopy_out
.Lcopy_bytes_fixup:
	mov %rcx, %rax
.Lcopy_out:
	SMAP_CLOSE
	ret

/* int guest_probe_read(const void* va, bool open): reads the byte at va, a
 * guest address, with the SMAP window open (STAC) or closed; 0 if it read, 1
 * if it faulted. Only for the boot self-test "selftest=smap"
 * (cpu/cpu_features.cc), which shows that a read outside guest_copy faults. */
	.globl guest_probe_read
guest_probe_read:
	test %esi, %esi
	jz .Lprobe
	SMAP_OPEN
.Lprobe:
	xor %eax, %eax
.Lprobe_read:
	movb (%rdi), %cl
	jmp .Lprobe_out
.Lprobe_fixup:
	mov $1, %eax
.Lprobe_out:
	SMAP_CLOSE
	ret

/* uint64_t load_gs_user_sel(uint16_t sel): SEGBASE_GS_USER_SEL's load, with
 * IF clear (pv/segment_base.cc). Loads sel into %gs, or the null selector
 * where the CPU refuses it (#GP, #NP: the fixup, as Xen's); returns the base
 * the descriptor gave, 0 for null. IA32_KERNEL_GS_BASE (the guest kernel's
 * base) is the same on the way out as on the way in.
 *
 * The load writes IA32_GS_BASE. So that an NMI, #MC or the load's own fault
 * finds this CPU's PerCpu at every instruction here, it is parked in
 * IA32_KERNEL_GS_BASE (SWAPGS) for as long as IA32_GS_BASE may hold another
 * base: before the first SWAPGS and after the second, IA32_GS_BASE is the
 * PerCpu; between them, IA32_KERNEL_GS_BASE is, and trap_from_hypervisor
 * (cpu/trap_entry.S), which finds IA32_GS_BASE not this stack's PerCpu, swaps it
 * in and marks the entry; trap_return swaps back. Such an entry resumes only
 * for the load's fault, at its fixup (cpu/traps.cc). Nothing reads through %gs
 * here. The guest kernel's base goes back into IA32_KERNEL_GS_BASE last,
 * with the PerCpu already in IA32_GS_BASE. */
	.globl load_gs_user_sel, load_gs_user_sel_load
load_gs_user_sel:
	mov $MSR_KERNEL_GS_BASE, %ecx
	rdmsr
	shl $32, %rdx
	or %rax, %rdx
	mov %rdx, %rsi                  /* the guest kernel's base */
	movzwl %di, %eax
	swapgs                          /* PerCpu parked in IA32_KERNEL_GS_BASE */
load_gs_user_sel_load:
	mov %ax, %gs
.Lgs_loaded:
	xor %edi, %edi                  /* a null selector's base: 0 */
	mov %gs, %eax
	test $0xfffc, %eax
	jz .Lgs_null
	mov $MSR_GS_BASE, %ecx
	rdmsr
	shl $32, %rdx
	or %rax, %rdx
	mov %rdx, %rdi                  /* the descriptor's base */
.Lgs_null:
	swapgs                          /* the PerCpu back in IA32_GS_BASE */
	mov $MSR_KERNEL_GS_BASE, %ecx
	mov %esi, %eax
	mov %rsi, %rdx
	shr $32, %rdx
	wrmsr
	mov %rdi, %rax
	ret
.Lgs_fixup:
	xor %eax, %eax
	mov %ax, %gs
	jmp .Lgs_loaded

	.section .rodata
	.balign 8
	.globl guest_copy_extable, guest_copy_extable_end
guest_copy_extable:			/* (faulting instruction, its fixup) */
	.quad .Lcopy_words, .Lcopy_words_fixup
	.quad .Lcopy_bytes, .Lcopy_bytes_fixup
	.quad .Lprobe_read, .Lprobe_fixup
	.quad load_gs_user_sel_load, .Lgs_fixup
guest_copy_extable_end:

	.section .note.GNU-stack, "", @progbits
