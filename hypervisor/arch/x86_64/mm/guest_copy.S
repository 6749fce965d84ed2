/* The hypervisor's one way into guest memory (mm/platform.cc's
 * copy_from_guest and copy_to_guest): a copy whose faults are fixed up into
 * a short count, and the probe the SMAP self-test reads with. */
#include "cpu/extable.h"
#include "cpu/smap_asm.h"

	.text

/* size_t guest_copy(void* dst, const void* src, size_t n): copies n bytes
 * where one side is guest memory (already checked to lie in the guest's
 * part of the address space) and returns how many were NOT copied. Words
 * first, then the n % 8 bytes left: one REP MOVSQ iteration per 8 bytes, not
 * eight REP MOVSB ones (the same on a CPU with fast strings, but under an
 * emulator each iteration is a load and a store; requests are copied here),
 * and a length of whole words returns without the tail's steps.
 * A fault on the copy (not present, or a write to a read-only page under
 * CR0.WP) resumes at its instruction's fixup through the fixup table (cpu/extable.h)
 * (cpu/traps.cc), with RCX the words or bytes left ("REP/REPE/..." in SDM Vol. 2B)
 * and RDX still n. The guest's pages are user pages (its kernel runs in ring
 * 3): under SMAP this is the one window that opens them (STAC), closed on
 * every way out (CLAC; the fault's entry closed it too, and its IRETQ to the
 * fixup restored the AC it found set). */
/* The body of both entries below; rc 1 returns 0 or -14 (-XEN_EFAULT, abi/,
 * asserted in mm/platform.cc) instead of the count left, so that
 * copy_from_guest and copy_to_guest end in a jump to it. */
.macro GUEST_COPY rc
	SMAP_OPEN
	mov %rdx, %rcx
	shr $3, %rcx
1:	rep movsq
	EXTABLE_ENTRY(1b, 4f)
	test $7, %dl			/* most copies are whole words: no tail */
	jnz 3f
	xor %eax, %eax
2:	SMAP_CLOSE
	ret
3:	mov %edx, %ecx
	and $7, %ecx
5:	rep movsb
	EXTABLE_ENTRY(5b, 6f)
	xor %eax, %eax
	jmp 2b
4:	and $7, %edx			/* words left, and the tail not started */
	lea (%rdx,%rcx,8), %rax
	jmp 7f
6:	mov %rcx, %rax
7:
.if \rc
	mov $-14, %eax			/* a fault leaves at least one byte */
.endif
	jmp 2b
.endm

	.globl guest_copy
guest_copy:
	GUEST_COPY 0

/* int guest_copy_rc(void* dst, const void* src, size_t n): guest_copy, but 0
 * when all n bytes were copied and -14 when not. */
	.globl guest_copy_rc
guest_copy_rc:
	GUEST_COPY 1

/* int guest_read16(void* dst, const void* src): the two words at src (guest
 * memory, already checked to lie in the guest's part of the address space)
 * into dst: 0, or -14 (-XEN_EFAULT) when either load faults, dst then
 * undefined. Two loads and no count: the #PF path's fetch of the
 * instruction that wrote a page table (pv/ptwr.cc), at every fork's page. */
	.globl guest_read16
guest_read16:
	SMAP_OPEN
1:	mov (%rsi), %rax
	EXTABLE_ENTRY(1b, 3f)
2:	mov 8(%rsi), %rcx
	EXTABLE_ENTRY(2b, 3f)
	mov %rax, (%rdi)
	mov %rcx, 8(%rdi)
	xor %eax, %eax
4:	SMAP_CLOSE
	ret
3:	mov $-14, %eax
	jmp 4b

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
	EXTABLE_ENTRY(.Lprobe_read, .Lprobe_fixup)
	jmp .Lprobe_out
.Lprobe_fixup:
	mov $1, %eax
.Lprobe_out:
	SMAP_CLOSE
	ret

	.section .note.GNU-stack, "", @progbits
