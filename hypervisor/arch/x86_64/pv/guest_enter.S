/* The first entry into a vCPU (pv/run.cc guest_run): its start registers
 * (VcpuArch::start, pv/domain.h) become the frame every later entry from
 * ring 3 leaves, and trap_return (cpu/trap_entry.S) takes it to ring 3. */
#include "cpu/entry_defs.h"

	.text

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

	.section .note.GNU-stack, "", @progbits
