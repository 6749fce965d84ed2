/* Facts shared by the guest entry assembly (pv/syscall_entry.S,
 * pv/guest_enter.S, cpu/trap_entry.S) and the C++ that reads the frames it
 * builds: PerCpu field offsets (asserted in cpu/percpu.h) and the
 * pseudo-vector a hypercall's TrapFrame carries. */
#pragma once

#define PERCPU_STACK_TOP 8    /* PerCpu::stack_top: TSS.RSP0, where ring 3 enters */
#define PERCPU_GUEST_RSP 16   /* PerCpu::guest_rsp: the guest's RSP during syscall entry */

/* sizeof(PerCpu) and the size of g_cpus (cpu/percpu.h, asserted there):
 * cpu/trap_entry.S finds a CPU's PerCpu from the stack it runs on. */
#define PERCPU_SIZE 256
#define PERCPU_MAX_CPUS 64

/* TrapFrame::vector bit that cpu/trap_entry.S sets when an entry from ring 0 found
 * the guest's %gs base and swapped in the hypervisor's (cpu/traps.cc). */
#define VECTOR_GUEST_GS 0x200

/* sizeof(TrapFrame) (cpu/traps.h, asserted there). */
#define TRAP_FRAME_SIZE 176   /* 22 registers of 8 bytes */

/* TrapFrame::vector of a frame built by syscall_entry: above every IDT vector. */
#define VECTOR_SYSCALL 0x100
/* ... and by syscall32_entry (SYSCALL from compatibility mode, IA32_CSTAR). */
#define VECTOR_SYSCALL32 0x101

/* RFLAGS bits SYSCALL clears (IA32_FMASK): TF, IF, DF, IOPL, NT, AC (as
 * cpu/cpu_bits.h's RFLAGS_*, asserted in pv/run.cc). IF stays clear until
 * the entry is on the hypervisor's stack with the hypervisor's %gs. */
#define SYSCALL_RFLAGS_MASK 0x47700
