// Xen PV ABI conformance of traps and emulation
// (docs/abi.md §10 "Emulation", §12): written from Xen's public headers, so
// the same kernel boots on pvmmu (qemu_guest_conform) and on Xen 4.17 as
// dom0 (xen_conform_guest), the reference. What pvmmu answers differently
// on purpose (documented in docs/abi.md §11) is checked on pvmmu only, found
// by XENVER_extraversion ("-pvmmu").
//
// - set_trap_table: entries merge per vector, an entry of address 0 ends the
//   list, NULL clears every vector.
// - #PF of the kernel: the error code's U/S bit clear.
// - INT n: delivered to the handler of vector n when its entry's DPL is not 0
//   (a PV kernel's mode), without an error code, RIP past the instruction;
//   #GP with the IDT bit in the error code otherwise; INT3 is #BP.
// - Emulated privileged instructions: mov from CR0 (the CPU's: AM set, on
//   both vCPUs' CPUs)/CR2/CR3/CR4, mov to CR0
//   (TS) and CR2, clts, wbinvd, rdmsr of EFER; #GP(0) for a change of CR0
//   other than TS and for an MSR no one knows.
// - fpu_taskswitch: TS set, the next x87 instruction raises #NM, after
//   which TS is clear.
// - SSE: CR4.OSFXSR and OSXMMEXCPT set, SSE2 runs, FXSAVE saves %xmm1,
//   MXCSR 0x1f80.
// - set_segment_base, rdmsr and wrmsr of the %fs/%gs bases: the bases the
//   guest's %fs:/%gs: loads use, -EINVAL / #GP(0) for a non-canonical one.
// - Xen's forced-emulation prefix before CPUID: Xen's leaves; the CPU's
//   through Xen's PV policy (cpuid_policy_checks, the words printed for a
//   comparison of the two runs, docs/abi.md §12.2); Xen's hypercall-page
//   MSR writes the hypercall page into a frame.
// - Debug registers: set_debugreg / get_debugreg's checks and errnos, mov
//   to and from %drN (#UD, #GP), CR4.DE and DR4/DR5, real data,
//   instruction and single-step breakpoints with DR6 as the guest reads it,
//   a breakpoint the hypervisor hits writing guest memory (a hypercall's
//   result, a bounce frame: the #DB's own included), which it ignores.
// - Port I/O, cli and sti: #GP at IOPL 0; PHYSDEVOP_set_iopl's checks; at
//   IOPL 1 a port without a device reads all ones, 0xcf8 reads back.
// - mov to %cr3: the L4 in use taken, a writable or absent frame #GP.
// - Linux's first L4 switch: the boot L4, unpinned and left, mapped
//   writable while vCPU 1 was never initialised (boot_l4_switch).
// - vm_assist's checks.
// - VCPUOP_initialise takes trap_ctxt[] (vCPU 1's INT3 reaches the
//   context's #BP handler), user_regs' IOPL (its port I/O at IOPL 1) and
//   ctrlreg[1], the user L4 (vCPU 1 then runs in user mode on it:
//   user_mode.cc); a bad trap handler, callback or kernel_sp, a ctrlreg[1]
//   that is no L4, user mode (no VGCF_in_kernel) without ctrlreg[1] are
//   -EINVAL and the vCPU stays down.
// - The read-only M2P: XENMEM_machphys_mapping as Xen
//   answers it; at MACH2PHYS_VIRT_START + mfn * 8 each of the guest's frames
//   reads its gpfn; a frame no domain has (pvmmu: the hypervisor's; Xen: its
//   shared_info frame, a page of Xen's) reads INVALID_M2P_ENTRY; a store is
//   a #PF (present, write, kernel mode) and changes nothing. memory_op's
//   reservation sub-ops about the caller, -ESRCH, -EINVAL, -ENOSYS.
// - update_descriptor (item 5): an entry of a frame loaded by set_gdt (the
//   frame mapped read-only, as Xen requires) changes, in the frame and in
//   the GDT: its selector loads, then #NP once it is not present. Refused
//   with -EINVAL, the entry unchanged: a misaligned address, a TSS or an
//   interrupt gate, a frame beyond memory or not the guest's, a page table.
//   A frame mapped writable takes the write (Xen's writable-type case).
//   DPL-0 data and 32-bit code stored with DPL 3 (in the frame, as Xen
//   fixes them), a not-present TSS as it is; a call gate: Xen takes it,
//   pvmmu refuses it (-EINVAL).
// - MMUEXT_SET_LDT and SEGBASE_GS_USER_SEL (ldt_checks).
// - Multicalls of update_descriptor, set_gdt, stack_switch, fpu_taskswitch,
//   set_segment_base, sched_op with update_va_mapping, mmu_update and
//   mmuext_op: each entry's result and effect as the call's made directly;
//   a continued set_trap_table finishes before the next entry; a nested
//   multicall -EINVAL; an iret entry resumes the guest at its frame and
//   ends the list (the entries after it not run).
// - Writable page tables (pt_writes): MOV, XCHG, LOCK CMPXCHG, LOCK BTR,
//   LOCK OR/AND, LOCK ANDB $0xfd (Linux's write-protect) and DS ANDB $0xfd
//   (the same on one CPU, its LOCK patched to DS), LOCK ORW, MOVB
//   and a 32-bit MOV straight into an entry of an L1 in use
//   through its read-only mapping, done as the instruction would; a
//   writable mapping of a page table, a misaligned write and (pvmmu) a
//   frame not ours: the CPU's #PF, the entry unchanged. A RIP-relative MOV
//   into an L1 the guest pinned (linked nowhere); after UNPIN, a #PF.
//   XENFEAT_writable_page_tables not reported to a PV guest.
// - The runstate: VCPUOP_get_runstate_info, VCPUOP_register_runstate_memory_area
//   (runstate, and vCPU 1's area through its up and down in vcpu_context).
// - VCPUOP_register_vcpu_info (vcpu_info_checks).
// - Event channels and timers: errnos, a local event, VIRQ_TIMER (events.cc).
// - Guest user mode (user_mode.cc).
// - Compatibility mode through a 32-bit code segment (compat_mode): iret
//   there, SYSCALL (#UD, the syscall32 callback), SYSENTER, INT $0x80;
//   CALLBACKOP_unregister's errnos by type.
#include "tiny_guest.h"

#include <xen/arch-x86/cpufeatureset.h>
#include <xen/arch-x86/cpuid.h>
#include <xen/features.h>
#include <xen/memory.h>
#include <xen/physdev.h>

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image
// conform_call(fn, a0, a1, a2) calls fn(a0, a1, a2) and returns its RAX; an
// exception on the way goes to conform_stubs + 16 * vector, which records
// R12 as the handler found it (conform_r12), the vector and the three words of the bounce frame after RCX and R11 (with an
// error code: it, RIP, CS; without: RIP, CS, RFLAGS) and returns to
// conform_call's caller with RAX -1.
extern "C" HIDDEN uint64_t conform_call(const void* fn, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0);
extern "C" HIDDEN char conform_stubs[], conform_int[];
extern "C" HIDDEN uint64_t conform_vector, conform_w[3];
extern "C" HIDDEN char c_rd_cr0[], c_rd_cr2[], c_rd_cr3[], c_rd_cr3_r9[], c_rd_cr4[], c_wr_cr0[], c_wr_cr2[],
    c_load[], c_clts[], c_wbinvd[], c_hlt[], c_rdmsr[], c_wrmsr[], c_inb[], c_fnop[], c_int3[], c_xen_cpuid[],
    c_nop[], c_rd_dr7[], c_rd_dr0[], c_wr_dr0[], c_wr_dr7[], c_rd_dr4[], c_rd_dr8[], c_wr_cr3[], c_wr_cr4[],
    c_store[], c_store_end[], c_bp_target[], c_step[], c_step_end[], c_step_emul[], c_step_emul_end[], c_inw[],
    c_inl[], c_inl_imm[], c_armed[], c_inb_end[], c_outb[], c_outl[], c_rep_insb[], c_rep_outsb[], c_cli[], c_sti[],
    c_load_es[], c_rd_fs[], c_rd_gs[], c_fs_read[], c_gs_sel[], c_st64[], c_xchg[], c_cmpxchg[], c_btr_a[],
    c_or[], c_and_imm8[], c_st_pinned[], c_andb_rw[], c_ds_andb_rw[], c_andb_nx_off[], c_movb[], c_orw[], c_sse_double[],
    c_fxsave_xmm1[],
    c_stmxcsr[], c_ldmxcsr[], c_divss_zero[];
extern "C" HIDDEN uint64_t conform_zf;
void event_checks(volatile shared_info_t* sh, volatile vcpu_info_t* vi);   // events.cc
void user_mode_checks(const start_info_t* si, uint64_t free, volatile shared_info_t* sh,
                      volatile vcpu_info_t* vi);   // user_mode.cc
uint64_t user_mode_l4(const start_info_t* si, uint64_t free);                // user_mode.cc
void vcpu1_user_mode();                                                      // user_mode.cc
void vcpu1_user_checks(uint64_t kstack_top);                                 // user_mode.cc
void vcpu1_user_start(vcpu_guest_context_t& ctx, uint64_t kstack_top);       // user_mode.cc
extern "C" HIDDEN char um_ud_entry[];   // user_mode.cc: an entry from user mode, back to um_call's caller
void sched_checks(bool pvmmu);                                               // sched.cc
void fifo_checks(const start_info_t* si, volatile vcpu_info_t* vi);          // fifo.cc
// A page of the image that pt_writes pins as an L1 (linked nowhere); c_st_pinned
// stores into its entry 2 RIP-relative.
extern "C" HIDDEN volatile uint64_t g_pin_l1[512];   // page-aligned, in .bss (the asm above)
extern "C" HIDDEN uint64_t conform_rsp, conform_r12;
// conform_mc_iret(list, nr) issues multicall(list, nr) with an iret_context
// on its stack that resumes at conform_mc_iret_back (CS and RFLAGS from
// conform_iret_cs/_rflags, RSP its own on entry): the multicall's stub pushes
// RCX (0x1111: the frame's R11) and R11 (0x2222: the frame's RAX), and the
// stub's return address is the frame's RCX. Resumed there, it records RCX
// and R11 in conform_w[0..1] and returns RAX; if the multicall returns, -2.
extern "C" HIDDEN char conform_mc_iret[], conform_mc_iret_ret[];
extern "C" HIDDEN uint64_t conform_iret_cs, conform_iret_rflags;
uint64_t conform_iret_cs, conform_iret_rflags;
// vCPU 1 (vcpu_context): it starts at conform_vcpu1_start, an IN from port
// 0xcf8 (its context's IOPL 1 allows it, as Linux's secondary CPUs rely
// on) then an INT3; its #GP handler notes the #GP and goes on to the INT3;
// its #BP handler aligns the stack and calls conform_vcpu1_trap.
extern "C" HIDDEN char conform_vcpu1_start[], conform_vcpu1_bp[], conform_vcpu1_gp[];
extern "C" HIDDEN volatile uint64_t conform_vcpu1_vector, conform_vcpu1_gp_seen;
extern "C" HIDDEN [[noreturn]] void conform_vcpu1_trap();
volatile uint64_t conform_vcpu1_vector = 0, conform_vcpu1_gp_seen = 0;
asm(R"(
    .pushsection .text
    .globl conform_vcpu1_start, conform_vcpu1_bp, conform_vcpu1_gp
    .hidden conform_vcpu1_start, conform_vcpu1_bp, conform_vcpu1_gp
conform_vcpu1_start:
    mov $0xcf8, %edx
    inl %dx, %eax
    int3
    ud2
conform_vcpu1_gp:
    movq $1, conform_vcpu1_gp_seen(%rip)
    int3
    ud2
conform_vcpu1_bp:
    and $-16, %rsp
    call conform_vcpu1_trap
    ud2
    .popsection
)");
asm(R"(
    .pushsection .text
    .hidden conform_call, conform_stubs, conform_int
    .globl conform_call, conform_stubs, conform_int
conform_call:
    push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15
    mov %rsp, conform_rsp(%rip)
    mov %rdi, %rax
    mov %rsi, %rdi
    mov %rdx, %rsi
    mov %rcx, %rdx
    call *%rax
1:  pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx
    ret
conform_trap:
    mov %r12, conform_r12(%rip)
    pop %rax
    mov %rax, conform_vector(%rip)
    mov 16(%rsp), %rax
    mov %rax, conform_w(%rip)
    mov 24(%rsp), %rax
    mov %rax, conform_w+8(%rip)
    mov 32(%rsp), %rax
    mov %rax, conform_w+16(%rip)
    mov conform_rsp(%rip), %rsp
    mov $-1, %rax
    jmp 1b
    .balign 16
conform_stubs:
    .set n, 0
    .rept 256
    .balign 16
    pushq $n
    jmp conform_trap
    .set n, n + 1
    .endr
    .balign 4
conform_int:            /* conform_int + 4 * n: int $n; ret */
    .set n, 0
    .rept 256
    .balign 4
    .byte 0xcd, n
    ret
    .set n, n + 1
    .endr

.macro SNIPPET name
    .hidden \name
    .globl \name
\name:
.endm
SNIPPET c_rd_cr0
    mov %cr0, %rax; ret
SNIPPET c_rd_cr2
    mov %cr2, %rax; ret
SNIPPET c_rd_cr3
    mov %cr3, %rax; ret
SNIPPET c_rd_cr3_r9
    mov %cr3, %r9; mov %r9, %rax; ret
SNIPPET c_rd_cr4
    mov %cr4, %rax; ret
SNIPPET c_wr_cr0
    mov %rdi, %cr0; xor %eax, %eax; ret
SNIPPET c_wr_cr2
    mov %rdi, %cr2; xor %eax, %eax; ret
SNIPPET c_load
    mov (%rdi), %rax; ret
SNIPPET c_load_es
    mov %di, %es; xor %eax, %eax; mov %ax, %es; ret
SNIPPET c_lar           /* the access rights LAR reads for selector %rdi, ~0 when it refuses */
    lar %edi, %eax; jz 1f; mov $-1, %rax; 1: ret
SNIPPET c_iret_to       /* c_iret_to(rip, cs, rsp): the iret hypercall to cs:rip on stack rsp */
    pushq $0xe02b; pushq %rdx; pushfq; pushq %rsi; pushq %rdi; pushq $0   /* the stub pushes RCX, R11, RAX */
    jmp hypercall_page + 23 * 32
SNIPPET c_fs_read       /* c_fs_read(sel, off): %fs = sel, the word at %fs:off, %fs null again */
    mov %di, %fs; mov %fs:(%rsi), %rax; xor %ecx, %ecx; mov %cx, %fs; ret
SNIPPET c_gs_sel        /* the selector %gs holds */
    xor %eax, %eax; mov %gs, %ax; ret
SNIPPET c_clts
    clts; xor %eax, %eax; ret
SNIPPET c_wbinvd
    wbinvd; xor %eax, %eax; ret
SNIPPET c_hlt
    hlt; xor %eax, %eax; ret
SNIPPET c_rdmsr
    mov %edi, %ecx; rdmsr; shl $32, %rdx; or %rdx, %rax; ret
SNIPPET c_rd_fs
    mov %fs:0, %rax; ret
SNIPPET c_rd_gs
    mov %gs:0, %rax; ret
SNIPPET conform_mc_iret
    mov %rsp, %rbx
    mov %ss, %eax
    push %rax                       /* ss */
    push %rbx                       /* rsp: conform_call's return address on top */
    pushq conform_iret_rflags(%rip)
    pushq conform_iret_cs(%rip)
    lea conform_mc_iret_back(%rip), %rax
    push %rax                       /* rip */
    pushq $0                        /* flags: not VGCF_in_syscall, so R11 and RCX come back */
    mov $0x1111, %ecx
    mov $0x2222, %r11d
    lea hypercall_page + 13 * 32(%rip), %rax
    call *%rax
SNIPPET conform_mc_iret_ret
    mov %rbx, %rsp
    mov $-2, %rax
    ret
conform_mc_iret_back:
    mov %rcx, conform_w(%rip)
    mov %r11, conform_w+8(%rip)
    ret
SNIPPET c_wrmsr
    mov %edi, %ecx; mov %esi, %eax; mov %rsi, %rdx; shr $32, %rdx; wrmsr; xor %eax, %eax; ret
SNIPPET c_inb
    mov %edi, %edx; xor %eax, %eax; inb %dx, %al
SNIPPET c_inb_end
    ret
SNIPPET c_fnop
    fnop; xor %eax, %eax; ret
SNIPPET c_sse_double    /* c_sse_double(v): 2 * v through %xmm0 (SSE2) */
    movq %rdi, %xmm0; paddq %xmm0, %xmm0; movq %xmm0, %rax; ret
SNIPPET c_fxsave_xmm1   /* c_fxsave_xmm1(area, v): %xmm1 = v, FXSAVE to area (512 bytes, 16-aligned) */
    movq %rsi, %xmm1; fxsave64 (%rdi); xor %eax, %eax; ret
SNIPPET c_stmxcsr
    push %rax; stmxcsr (%rsp); pop %rax; mov %eax, %eax; ret
SNIPPET c_ldmxcsr
    push %rdi; ldmxcsr (%rsp); pop %rdi; xor %eax, %eax; ret
SNIPPET c_divss_zero    /* 1.0f / 0.0f in %xmm0: #XM when MXCSR.ZM is clear and CR4.OSXMMEXCPT set */
    mov $0x3f800000, %eax; movd %eax, %xmm0; xorps %xmm1, %xmm1; divss %xmm1, %xmm0; xor %eax, %eax; ret
SNIPPET c_int3
    int3; xor %eax, %eax; ret
/* c_xen_cpuid(leaf, regs[4], subleaf): Xen's forced-emulation prefix, then CPUID. */
SNIPPET c_xen_cpuid
    push %rbx
    mov %edi, %eax
    mov %edx, %ecx
    ud2; .ascii "xen"; cpuid
    mov %eax, (%rsi); mov %ebx, 4(%rsi); mov %ecx, 8(%rsi); mov %edx, 12(%rsi)
    pop %rbx
    xor %eax, %eax
    ret
SNIPPET c_nop
    xor %eax, %eax; ret
SNIPPET c_rd_dr7
    mov %dr7, %rax; ret
SNIPPET c_rd_dr0
    mov %dr0, %rax; ret
SNIPPET c_wr_dr0
    mov %rdi, %dr0; xor %eax, %eax; ret
SNIPPET c_wr_dr7
    mov %rdi, %dr7; xor %eax, %eax; ret
SNIPPET c_rd_dr4        /* mov %dr4, %rax */
    .byte 0x0f, 0x21, 0xe0; ret
SNIPPET c_rd_dr8        /* mov %dr8, %rax: REX.R */
    .byte 0x44, 0x0f, 0x21, 0xc0; ret
SNIPPET c_wr_cr3
    mov %rdi, %cr3; xor %eax, %eax; ret
SNIPPET c_wr_cr4
    mov %rdi, %cr4; xor %eax, %eax; ret
SNIPPET c_store         /* c_store(p, v): *(uint32_t*)p = v */
    movl %esi, (%rdi)
SNIPPET c_store_end
    xor %eax, %eax; ret
SNIPPET c_bp_target
    nop; xor %eax, %eax; ret
SNIPPET c_step          /* TF on: the NOP after the POPF traps; R12 a mark the handler sees */
    mov $0x5a5a1234, %r12
    pushfq; orq $0x100, (%rsp); popfq
    nop
SNIPPET c_step_end
    xor %eax, %eax; ret
SNIPPET c_step_emul     /* TF on over an emulated instruction */
    pushfq; orq $0x100, (%rsp); popfq
    mov %cr0, %rax
SNIPPET c_step_emul_end
    xor %eax, %eax; ret
SNIPPET c_armed         /* c_armed(dr7, fn): set_debugreg(7, dr7), then fn's body, jumped to */
    push %rsi
    mov %rdi, %rsi
    mov $7, %edi
    call hypercall_page + 8 * 32
    pop %rsi
    jmp *%rsi
SNIPPET c_inw
    mov %edi, %edx; mov $0x12345678, %eax; inw %dx, %ax; ret
SNIPPET c_inl
    mov %edi, %edx; mov $-1, %rax; inl %dx, %eax; ret
SNIPPET c_inl_imm
    mov $-1, %rax; inl $0xe0, %eax; ret
SNIPPET c_outb
    mov %edi, %edx; mov %esi, %eax; outb %al, %dx; xor %eax, %eax; ret
SNIPPET c_outl
    mov %edi, %edx; mov %esi, %eax; outl %eax, %dx; xor %eax, %eax; ret
SNIPPET c_rep_insb      /* c_rep_insb(buf, n, port): RCX left */
    mov %rsi, %rcx; rep insb; mov %rcx, %rax; ret
SNIPPET c_rep_outsb     /* c_rep_outsb(buf, n, port): RCX left */
    mov %rsi, %rcx; mov %rdi, %rsi; rep outsb; mov %rcx, %rax; ret
SNIPPET c_cli
    cli; xor %eax, %eax; ret
SNIPPET c_st64          /* c_st64(p, v): *(uint64_t*)p = v */
    mov %rsi, (%rdi); xor %eax, %eax; ret
SNIPPET c_xchg          /* c_xchg(p, v): the old value */
    mov %rsi, %rax; xchg %rax, (%rdi); ret
SNIPPET c_cmpxchg       /* c_cmpxchg(p, expect, new): RAX after it; ZF into conform_zf */
    mov %rsi, %rax; lock cmpxchg %rdx, (%rdi); setz %cl; movzbl %cl, %ecx; mov %rcx, conform_zf(%rip); ret
SNIPPET c_btr_a         /* c_btr_a(p): lock btrq $5 (Accessed), its CF */
    xor %eax, %eax; lock btrq $5, (%rdi); setc %al; ret
SNIPPET c_or            /* c_or(p, v): lock or */
    lock or %rsi, (%rdi); xor %eax, %eax; ret
SNIPPET c_and_imm8      /* c_and_imm8(p): lock andq $-2 (P off), sign-extended imm8 */
    lock andq $-2, (%rdi); xor %eax, %eax; ret
SNIPPET c_andb_rw       /* c_andb_rw(p): lock andb $0xfd (RW off), Linux's clear_bit(_PAGE_BIT_RW) */
    lock andb $0xfd, (%rdi); xor %eax, %eax; ret
SNIPPET c_ds_andb_rw    /* c_ds_andb_rw(p): ds andb $0xfd: Linux's clear_bit on one CPU, its LOCK patched to DS */
    .byte 0x3e; andb $0xfd, (%rdi); xor %eax, %eax; ret
SNIPPET c_andb_nx_off   /* c_andb_nx_off(p): lock andb $0x7f, 7(p): NX off by the write-protect's form with a disp8; ZF (bit 0) and SF (bit 1) into conform_zf */
    lock andb $0x7f, 7(%rdi); setz %cl; sets %dl; movzbl %cl, %ecx; movzbl %dl, %edx; lea (%rcx,%rdx,2), %rcx; mov %rcx, conform_zf(%rip); xor %eax, %eax; ret
SNIPPET c_movb          /* c_movb(p, v): *(uint8_t*)p = v, from %sil (a REX byte register) */
    mov %sil, (%rdi); xor %eax, %eax; ret
SNIPPET c_orw           /* c_orw(p, v): lock orw %si */
    lock orw %si, (%rdi); xor %eax, %eax; ret
SNIPPET c_st_pinned     /* c_st_pinned(v): g_pin_l1[2] = v, RIP-relative */
    mov %rdi, g_pin_l1+16(%rip); xor %eax, %eax; ret
SNIPPET c_sti
    sti; xor %eax, %eax; ret
    .popsection
    .pushsection .bss
    .balign 8
    .hidden conform_vector, conform_w, conform_rsp, conform_r12
    .globl conform_vector, conform_w, conform_rsp, conform_r12
conform_rsp: .quad 0
conform_r12: .quad 0
conform_vector: .quad 0
conform_w: .quad 0, 0, 0
    .hidden conform_zf
    .globl conform_zf
conform_zf: .quad 0
    .balign 4096
    .hidden g_pin_l1
    .globl g_pin_l1
g_pin_l1: .zero 4096
    .popsection
/* The compatibility-mode code (compat_mode), a page of its own that the
 * guest also maps below 4 GiB: each piece traps, and conform_trap goes back
 * to 64-bit code. */
    .pushsection .text.compat, "ax", @progbits
    .balign 4096
    .globl c32_page, c32_ud2, c32_syscall, c32_sysenter, c32_int80, c32_end
    .hidden c32_page, c32_ud2, c32_syscall, c32_sysenter, c32_int80, c32_end
    .code32
c32_page:
c32_ud2:
    ud2
c32_syscall:
    syscall
    ud2
c32_sysenter:
    sysenter
    ud2
c32_int80:
    int $0x80
    ud2
c32_end:
    .code64
    .balign 4096
    .popsection
)");

namespace {

constexpr uint64_t kNoTrap = ~0ull;
constexpr uint64_t kCr0Ts = 1u << 3, kCr0Am = 1u << 18;
void checkx(const char* what, uint64_t got, uint64_t want);

// Runs fn; the vector it ended with, kNoTrap when it returned.
uint64_t trap_of(const void* fn, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t* rax = nullptr, uint64_t a2 = 0)
{
    conform_vector = kNoTrap;
    conform_w[0] = conform_w[1] = conform_w[2] = 0;
    const uint64_t r = conform_call(fn, a0, a1, a2);
    if (rax) *rax = r;
    return conform_vector;
}

uint64_t int_n(unsigned n) { return trap_of(conform_int + 4 * n); }

constexpr uint32_t feature(unsigned f) { return 1u << (f % 32); }

// The words of one forced-emulation CPUID leaf, printed so that a run on
// pvmmu and one on Xen can be compared word by word (docs/abi.md §12.2).
void print_cpuid(uint32_t leaf, uint32_t sub, uint32_t (&r)[4])
{
    trap_of(c_xen_cpuid, leaf, uint64_t(r), nullptr, sub);
    write("xen cpuid ");
    write_hex(leaf);
    write(".");
    write_hex(sub);
    write(":");
    for (uint32_t w : r) write(" "), write_hex(w);
    write("\n");
}

// The leaf range of Xen 4.17's PV policy: basic leaves up to 0xD, extended
// ones up to 0x80000008 on Intel and 0x80000021 on AMD, and the leaves it
// does not describe empty: 0xA (PMU), 0xB (the host's topology) and 0x14
// (PT, above 0xD), which TCG's CPUs fill. FSGSBASE is printed, not checked:
// Xen shows it where the CPU has it, pvmmu never (docs/abi.md §12.2).
void cpuid_range_checks()
{
    uint32_t r[4];
    const uint32_t leaves[] = {0xa, 0xb, 0x14};
    for (uint32_t leaf : leaves) print_cpuid(leaf, 0, r);
    trap_of(c_xen_cpuid, 0, uint64_t(r));
    const bool intel = r[1] == 0x756e6547u;   // "Genu"
    check("xen cpuid 0: highest basic leaf at most 0xD", r[0] <= 0xd, 1);
    trap_of(c_xen_cpuid, 0x80000000, uint64_t(r));
    check("xen cpuid 0x80000000: highest extended leaf at most 0x80000008 (Intel), 0x80000021",
          r[0] <= (intel ? 0x80000008u : 0x80000021u), 1);
    uint32_t any = 0;
    for (uint32_t leaf : leaves) {
        trap_of(c_xen_cpuid, leaf, uint64_t(r));
        any |= r[0] | r[1] | r[2] | r[3];
    }
    check("xen cpuid 0xA, 0xB, 0x14: empty", any, 0);
    trap_of(c_xen_cpuid, 7, uint64_t(r));
    write("xen cpuid 7 FSGSBASE: "), write_hex(r[1] & feature(XEN_X86_FEATURE_FSGSBASE)), write("\n");
}

// Xen's default PV policy (cpufeatureset.h: only 'A' features reach a PV
// guest) for what a PV kernel acts on. TCG's CPU is qemu64 (AuthenticAMD)
// with SMEP, SMAP and UMIP, so each hidden bit is one the CPU has: a kernel
// that saw SMAP would patch STAC/CLAC in, which #UD in ring 3; PSE, PGE
// and 1 GiB pages in 0x80000001 (AMD's copies of leaf 1) would have it
// build superpages or global mappings mmu_update refuses.
void cpuid_policy_checks()
{
    uint32_t r[4];
    const uint32_t leaves[] = {0, 1, 7, 0xd, 0x80000000, 0x80000001, 0x80000007, 0x80000008};
    for (uint32_t leaf : leaves) print_cpuid(leaf, 0, r);
    print_cpuid(0xd, 1, r);
    trap_of(c_xen_cpuid, 7, uint64_t(r));
    check("xen cpuid 7: SMEP, SMAP, INVPCID, TSC_ADJUST hidden (EBX)",
          long(r[1] & (feature(XEN_X86_FEATURE_SMEP) | feature(XEN_X86_FEATURE_SMAP) |
                       feature(XEN_X86_FEATURE_INVPCID) | feature(XEN_X86_FEATURE_TSC_ADJUST))), 0);
    check("  UMIP, PKU hidden (ECX)", long(r[2] & (feature(XEN_X86_FEATURE_UMIP) | feature(XEN_X86_FEATURE_PKU))), 0);
    trap_of(c_xen_cpuid, 0x80000001, uint64_t(r));
    check("xen cpuid 0x80000001: PSE, PGE, PSE36, VME, 1 GiB pages hidden (EDX)",
          long(r[3] & (feature(XEN_X86_FEATURE_PSE) | feature(XEN_X86_FEATURE_PGE) | feature(XEN_X86_FEATURE_PSE36) |
                       feature(XEN_X86_FEATURE_VME) | feature(XEN_X86_FEATURE_PAGE1GB))), 0);
    check("  long mode, NX, SYSCALL shown", long(r[3] & (feature(XEN_X86_FEATURE_LM) | feature(XEN_X86_FEATURE_NX) |
                                                       feature(XEN_X86_FEATURE_SYSCALL))),
          long(feature(XEN_X86_FEATURE_LM) | feature(XEN_X86_FEATURE_NX) | feature(XEN_X86_FEATURE_SYSCALL)));
    trap_of(c_xen_cpuid, 1, uint64_t(r));
    // Bits cpufeatureset.h does not name (ECX 10, 11, 16; EDX 10, 18, 20, 30)
    // and X2APIC ('!S').
    check("xen cpuid 1: unnamed bits and x2APIC hidden",
          long((r[2] & ((1u << 10) | (1u << 11) | (1u << 16) | feature(XEN_X86_FEATURE_X2APIC))) |
               (r[3] & ((1u << 10) | (1u << 18) | (1u << 20) | (1u << 30)))), 0);
    // vCPU 0's initial APIC ID (EBX 31:24), as Xen gives a PV vCPU.
    write("xen cpuid 1 APIC ID: "), write_hex(r[1] >> 24), write("\n");
    cpuid_range_checks();
}

trap_info_t entry(unsigned v, unsigned dpl, bool handler = true)
{
    return trap_info_t{uint8_t(v), uint8_t(dpl), FLAT_RING3_CS64, handler ? uint64_t(conform_stubs + 16 * v) : 0};
}

long set_trap_table(const trap_info_t* t) { return hypercall(__HYPERVISOR_set_trap_table, uint64_t(t)); }

// Every exception vector to its stub: #BP's with DPL 3 (as a PV kernel sets
// it), the others 0, so that INT n of them stays a #GP.
void install_exceptions()
{
    trap_info_t t[33];
    for (unsigned v = 0; v < 32; ++v) t[v] = entry(v, v == 3 ? 3 : 0);
    t[32] = trap_info_t{0, 0, 0, 0};
    check("set_trap_table of vectors 0-31", set_trap_table(t), 0);
}

bool on_pvmmu()
{
    xen_extraversion_t s{};
    hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, uint64_t(&s));
    return s[0] == '-' && s[1] == 'p' && s[2] == 'v' && s[3] == 'm' && s[4] == 'm' && s[5] == 'u';
}

// Under QEMU's TCG an INT n's #GP names the gate as n * 16 + 2, and Xen
// takes the vector from that error code (error >> 3): 2n. So every vector
// here that INT n should reach has a twin 2n with the same entry, and on
// Xen either counts (docs/abi.md §12); pvmmu reads the vector from the
// instruction, so on pvmmu only n does.
bool g_pvmmu;

bool delivered(unsigned n)
{
    const uint64_t got = trap_of(conform_int + 4 * n);
    return got == n || (!g_pvmmu && got == ((2 * n) & 0xff));
}

void traps()
{
    install_exceptions();
    // Merge: a second list adds vectors and leaves the others as they were.
    const trap_info_t more[] = {entry(0x80, 3), entry(0x21, 1), entry(0x42, 1), entry(0x22, 0), entry(0x44, 0),
                                {0, 0, 0, 0}};
    check("set_trap_table of 0x80, 0x21, 0x22", set_trap_table(more), 0);
    check("int $0x80, DPL 3: delivered", int_n(0x80), 0x80);
    check("  RIP past the int", conform_w[0] == uint64_t(conform_int + 4 * 0x80 + 2), 1);
    // The bounce frame's CS carries Xen's saved upcall mask in bits 32-39,
    // and RPL 0 for an event in the guest's kernel mode (Linux's entry code
    // reads the RPL to tell kernel from user mode).
    check("  no error code: CS next, RPL 0 (kernel context)", long(conform_w[1] & 0xffff), FLAT_RING3_CS64 & ~3);
    check("int $0x21, DPL 1: delivered to a PV kernel", delivered(0x21), 1);
    check("int $0x22, DPL 0: #GP (the earlier list's handler)", int_n(0x22), 13);
    check("  error code: an IDT gate", long(conform_w[0] & 7), 2);
    check("int $0x26, no entry: #GP", int_n(0x26), 13);
    check("int $13, DPL 0: #GP", int_n(13), 13);
    check("int3: #BP", trap_of(c_int3), 3);
    check("int $3: #BP", int_n(3), 3);
    check("  RIP past the int", conform_w[0] == uint64_t(conform_int + 4 * 3 + 2), 1);

    // An entry of address 0 ends the list: 0x25 after it is not taken.
    const trap_info_t ended[] = {entry(0x23, 3), entry(0x46, 3), entry(0x24, 3, false), entry(0x25, 3),
                                 entry(0x4a, 3), {0, 0, 0, 0}};
    check("set_trap_table with an early end", set_trap_table(ended), 0);
    check("int $0x23, before the end: delivered", delivered(0x23), 1);
    check("int $0x25, after the end: #GP", int_n(0x25), 13);
    check("int $0x21 still delivered", delivered(0x21), 1);

    // NULL clears every vector: after it, only what is set again.
    check("set_trap_table(NULL)", set_trap_table(nullptr), 0);
    install_exceptions();
    check("int $0x80 after NULL: #GP", int_n(0x80), 13);
    check("int $0x21 after NULL: #GP", int_n(0x21), 13);

    // A page fault of the kernel: U/S clear in the error code, as Xen
    // reports a fault of a PV guest's kernel mode; CR2 (emulated) the address.
    const uint64_t hole = XENPV_VIRT_BASE + (1ull << 38);
    check("a load from an unmapped address: #PF", trap_of(c_load, hole), 14);
    check("  error code: not present, read, kernel mode", long(conform_w[0] & 0x1f), 0);
    uint64_t cr2 = 0;
    trap_of(c_rd_cr2, 0, 0, &cr2);
    check("  %cr2: the address", cr2 == hole, 1);
}

// Xen's hypercall-page MSR (CPUID 0x40000002 EBX) written with the machine
// address of `free`, a frame of the guest's past its boot structures (the
// initial RSP's, mapped on Xen too): the page the ELF note's is.
void hypercall_msr(const start_info_t* si, uint64_t free)
{
    uint8_t* page = reinterpret_cast<uint8_t*>(gpfn_bytes(free));
    for (int i = 0; i < 4096; ++i) page[i] = 0;
    const uint64_t maddr = p2m(si)[free] << 12;
    check("wrmsr of the hypercall-page MSR: emulated", trap_of(c_wrmsr, XEN_CPUID_FIRST_LEAF, maddr), kNoTrap);
    bool same = true;
    static constexpr unsigned kStubs[] = {0, 17, 29};   // set_trap_table, xen_version, sched_op
    for (unsigned nr : kStubs)
        for (unsigned i = 0; i < 14; ++i) same &= page[nr * 32 + i] == uint8_t(hypercall_page[nr * 32 + i]);
    check("  its stubs are the ELF note's page's", same, 1);
    check("  page index 1: #GP", trap_of(c_wrmsr, XEN_CPUID_FIRST_LEAF, maddr | 1), 13);
    check("  a page-table frame: #GP", trap_of(c_wrmsr, XEN_CPUID_FIRST_LEAF, xen_pfn_to_cr3(p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12])), 13);
}

void emulation(const start_info_t* si, bool pvmmu)
{
    uint64_t v = 0;
    check("mov %cr0: emulated", trap_of(c_rd_cr0, 0, 0, &v), kNoTrap);
    check("  PE and PG set", long(v & 0x80000001), 0x80000001);
    // The CPU's CR0 (both read it): AM set, as Xen boots every CPU, so that
    // a guest's EFLAGS.AC turns on alignment checking in ring 3.
    check("  AM set", long(v & kCr0Am), long(kCr0Am));
    const uint64_t cr0 = v;
    const uint64_t l4 = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    check("mov %cr3: emulated", trap_of(c_rd_cr3, 0, 0, &v), kNoTrap);
    check("  the L4's frame in Xen's format", v == xen_pfn_to_cr3(l4), 1);
    check("mov %cr3, %r9: emulated", trap_of(c_rd_cr3_r9, 0, 0, &v), kNoTrap);
    check("  the same", v == xen_pfn_to_cr3(l4), 1);
    check("mov %cr4: emulated", trap_of(c_rd_cr4, 0, 0, &v), kNoTrap);
    check("  PAE set", long(v & 0x20), 0x20);
    check("mov to %cr2: emulated", trap_of(c_wr_cr2, 0x123456789000), kNoTrap);
    check("mov %cr2: emulated", trap_of(c_rd_cr2, 0, 0, &v), kNoTrap);
    check("  what was written", v == 0x123456789000, 1);
    check("mov to %cr0 changing AM: #GP", trap_of(c_wr_cr0, cr0 ^ (1u << 18)), 13);
    check("  error code 0", long(conform_w[0]), 0);
    check("wbinvd: emulated", trap_of(c_wbinvd), kNoTrap);
    check("rdmsr EFER: emulated", trap_of(c_rdmsr, 0xc0000080, 0, &v), kNoTrap);
    check("  LME and LMA set", long(v & 0x500), 0x500);
    check("rdmsr of an unknown MSR: #GP", trap_of(c_rdmsr, 0x1234), 13);
    check("wrmsr of an unknown MSR: #GP", trap_of(c_wrmsr, 0x1234, 1), 13);

    // The virtual CR0.TS: fpu_taskswitch, clts, mov to %cr0 and #NM.
    check("fpu_taskswitch(1)", hypercall(__HYPERVISOR_fpu_taskswitch, 1), 0);
    trap_of(c_rd_cr0, 0, 0, &v);
    check("  TS in %cr0", long(v & kCr0Ts), long(kCr0Ts));
    check("  fnop: #NM", trap_of(c_fnop), 7);
    trap_of(c_rd_cr0, 0, 0, &v);
    check("  TS clear after the #NM", long(v & kCr0Ts), 0);
    check("  fnop again: runs", trap_of(c_fnop), kNoTrap);
    check("fpu_taskswitch(1) again", hypercall(__HYPERVISOR_fpu_taskswitch, 1), 0);
    check("clts: emulated", trap_of(c_clts), kNoTrap);
    check("  fnop after clts: runs", trap_of(c_fnop), kNoTrap);
    check("mov to %cr0 setting TS: emulated", trap_of(c_wr_cr0, cr0 | kCr0Ts), kNoTrap);
    check("  fnop: #NM", trap_of(c_fnop), 7);
    check("fpu_taskswitch(0)", hypercall(__HYPERVISOR_fpu_taskswitch, 0), 0);
    check("  fnop: runs", trap_of(c_fnop), kNoTrap);

    // SSE as a PV kernel finds it (Xen sets CR4.OSFXSR and OSXMMEXCPT for
    // itself, and its guests run under them): SSE instructions run, FXSAVE
    // saves the XMM registers (with OSFXSR clear it need not: SDM vol. 2,
    // FXSAVE), MXCSR starts at its reset value. (An unmasked SIMD exception
    // is not checked: QEMU's TCG raises no #XM.)
    trap_of(c_rd_cr4, 0, 0, &v);
    check("  %cr4: OSFXSR and OSXMMEXCPT set", long(v & 0x600), 0x600);
    check("SSE2 paddq: runs", trap_of(c_sse_double, 21, 0, &v), kNoTrap);
    check("  2 * 21", long(v), 42);
    alignas(16) static uint64_t fx[64];
    fx[22] = 0;
    check("fxsave: runs", trap_of(c_fxsave_xmm1, uint64_t(fx), 0x1234567890abcdefull), kNoTrap);
    checkx("  %xmm1 saved (bytes 176-183)", fx[22], 0x1234567890abcdefull);
    check("stmxcsr: runs", trap_of(c_stmxcsr, 0, 0, &v), kNoTrap);
    checkx("  MXCSR at its reset value (all exceptions masked)", v, 0x1f80);
    check("divss by zero, masked: runs", trap_of(c_divss_zero), kNoTrap);
    check("ldmxcsr (ZE cleared): runs", trap_of(c_ldmxcsr, 0x1f80), kNoTrap);

    // Xen's leaves through the forced-emulation prefix.
    uint32_t r[4];
    check("xen cpuid 0x40000000: emulated", trap_of(c_xen_cpuid, XEN_CPUID_LEAF(0), uint64_t(r)), kNoTrap);
    check("  XenVMMXenVMM", r[1] == XEN_CPUID_SIGNATURE_EBX && r[2] == XEN_CPUID_SIGNATURE_ECX &&
                                r[3] == XEN_CPUID_SIGNATURE_EDX, 1);
    check("  leaves up to 0x40000002 at least", r[0] >= XEN_CPUID_LEAF(2), 1);
    trap_of(c_xen_cpuid, XEN_CPUID_LEAF(1), uint64_t(r));
    check("xen cpuid 0x40000001: the version xen_version gives",
          r[0] == uint64_t(hypercall(__HYPERVISOR_xen_version, XENVER_version)), 1);
    trap_of(c_xen_cpuid, XEN_CPUID_LEAF(2), uint64_t(r));
    check("xen cpuid 0x40000002: one hypercall page, MSR 0x40000000", r[0] == 1 && r[1] == XEN_CPUID_FIRST_LEAF, 1);
    trap_of(c_xen_cpuid, 1, uint64_t(r));
    check("xen cpuid 1: the hypervisor bit", long(r[2] >> 31), 1);
    // Xen's PV policy (cpufeatureset.h, not 'A'): no superpages, no global
    // pages, no PCID for a PV kernel. TCG's qemu64 and every host have PSE.
    check("xen cpuid 1: PSE, PGE, PSE36 and PCID hidden",
          long((r[3] & ((1u << 3) | (1u << 13) | (1u << 17))) | (r[2] & (1u << 17))), 0);
    trap_of(c_xen_cpuid, 0x80000001, uint64_t(r));
    check("xen cpuid 0x80000001: 1 GiB pages hidden", long(r[3] & (1u << 26)), 0);
    cpuid_policy_checks();

    // Not emulated for a PV kernel, on Xen (dom0 included) as on pvmmu.
    check("inb from port 0x80: #GP", trap_of(c_inb, 0x80), 13);
    check("hlt: #GP", trap_of(c_hlt), 13);
    check("  error code 0", long(conform_w[0]), 0);
    (void)pvmmu;
}

// set_segment_base and the MSRs of the segment bases: a
// base the guest sets is the one its %fs: or %gs: loads use and rdmsr reads
// back, after a hypercall and a bounced trap too; the user mode's %gs base
// is kept for rdmsr of IA32_KERNEL_GS_BASE. A non-canonical base: -EINVAL,
// or #GP(0) for wrmsr, and the base as it was.
uint64_t g_fs_word = 0x1111222233334444, g_gs_word = 0x5555666677778888;
constexpr uint32_t kMsrFs = 0xc0000100, kMsrGs = 0xc0000101, kMsrShadowGs = 0xc0000102;
constexpr uint64_t kNonCanonical = 0x0000800000000000, kUserGs = 0x00007f0000123000;

long set_base(unsigned which, uint64_t base) { return hypercall(__HYPERVISOR_set_segment_base, which, base); }

// The MSR's value, or ~0 when rdmsr traps.
uint64_t base_msr(uint32_t msr)
{
    uint64_t v;
    return trap_of(c_rdmsr, msr, 0, &v) == kNoTrap ? v : ~0ull;
}

// What a load through the segment (c_rd_fs, c_rd_gs) reads, or ~0 when it traps.
uint64_t through(const char* snippet)
{
    uint64_t v;
    return trap_of(snippet, 0, 0, &v) == kNoTrap ? v : ~0ull;
}

void segment_bases(bool pvmmu)
{
    const uint64_t fs = uint64_t(&g_fs_word), gs = uint64_t(&g_gs_word);
    check("set_segment_base(SEGBASE_FS)", set_base(SEGBASE_FS, fs), 0);
    check("  %fs:0 reads through it", through(c_rd_fs) == g_fs_word, 1);
    check("  rdmsr IA32_FS_BASE: it", base_msr(kMsrFs) == fs, 1);
    check("set_segment_base(SEGBASE_GS_KERNEL)", set_base(SEGBASE_GS_KERNEL, gs), 0);
    check("  %gs:0 reads through it", through(c_rd_gs) == g_gs_word, 1);
    check("  rdmsr IA32_GS_BASE: it", base_msr(kMsrGs) == gs, 1);
    check("  after a bounced #GP (hlt)", trap_of(c_hlt) == 13 && through(c_rd_gs) == g_gs_word, 1);
    check("  %fs:0 still reads through its own", through(c_rd_fs) == g_fs_word, 1);
    check("set_segment_base(SEGBASE_GS_USER)", set_base(SEGBASE_GS_USER, kUserGs), 0);
    check("  rdmsr IA32_KERNEL_GS_BASE: it", base_msr(kMsrShadowGs) == kUserGs, 1);
    check("  the kernel's %gs base kept", base_msr(kMsrGs) == gs && through(c_rd_gs) == g_gs_word, 1);
    check("set_segment_base(SEGBASE_FS, non-canonical): -EINVAL", set_base(SEGBASE_FS, kNonCanonical), -XEN_EINVAL);
    check("  the base as it was", base_msr(kMsrFs) == fs, 1);
    check("set_segment_base(SEGBASE_GS_KERNEL, non-canonical): -EINVAL", set_base(SEGBASE_GS_KERNEL, ~kNonCanonical),
          -XEN_EINVAL);
    check("  the base as it was", base_msr(kMsrGs) == gs, 1);
    check("set_segment_base(SEGBASE_GS_USER, non-canonical): -EINVAL", set_base(SEGBASE_GS_USER, kNonCanonical),
          -XEN_EINVAL);
    check("  the base as it was", base_msr(kMsrShadowGs) == kUserGs, 1);
    check("set_segment_base(4): -EINVAL", set_base(4, 0), -XEN_EINVAL);

    check("wrmsr IA32_FS_BASE: emulated", trap_of(c_wrmsr, kMsrFs, gs), kNoTrap);
    check("  %fs:0 reads through it", through(c_rd_fs) == g_gs_word, 1);
    check("wrmsr IA32_GS_BASE: emulated", trap_of(c_wrmsr, kMsrGs, fs), kNoTrap);
    check("  %gs:0 reads through it", through(c_rd_gs) == g_fs_word, 1);
    check("  rdmsr IA32_GS_BASE: it", base_msr(kMsrGs) == fs, 1);
    check("wrmsr IA32_KERNEL_GS_BASE: emulated", trap_of(c_wrmsr, kMsrShadowGs, kUserGs + 0x1000), kNoTrap);
    check("  rdmsr IA32_KERNEL_GS_BASE: it", base_msr(kMsrShadowGs) == kUserGs + 0x1000, 1);
    check("  the kernel's %gs base kept", through(c_rd_gs) == g_fs_word, 1);
    check("wrmsr IA32_FS_BASE, non-canonical: #GP", trap_of(c_wrmsr, kMsrFs, kNonCanonical), 13);
    check("  error code 0", long(conform_w[0]), 0);
    check("  the base as it was", base_msr(kMsrFs) == gs, 1);
    check("wrmsr IA32_GS_BASE, non-canonical: #GP", trap_of(c_wrmsr, kMsrGs, kNonCanonical), 13);
    check("  the base as it was", base_msr(kMsrGs) == fs, 1);
    check("wrmsr IA32_KERNEL_GS_BASE, non-canonical: #GP", trap_of(c_wrmsr, kMsrShadowGs, kNonCanonical), 13);
    check("  the base as it was", base_msr(kMsrShadowGs) == kUserGs + 0x1000, 1);
    // docs/abi.md §12.1: a base in the hypervisor's L4 slots (256-271),
    // which Xen takes although no guest can map there, is refused on pvmmu.
    // (SEGBASE_GS_USER_SEL: ldt_checks, with an LDT to name.)
    constexpr uint64_t kHv = 0xffff808000000000;
    if (!pvmmu) {
        check("set_segment_base(SEGBASE_GS_KERNEL, Xen's slots): 0 on Xen", set_base(SEGBASE_GS_KERNEL, kHv), 0);
        check("  rdmsr IA32_GS_BASE: it", base_msr(kMsrGs) == kHv, 1);
        check("  and back", set_base(SEGBASE_GS_KERNEL, fs), 0);
    } else {
        check("set_segment_base(SEGBASE_GS_KERNEL, hypervisor slot): -EINVAL on pvmmu",
              set_base(SEGBASE_GS_KERNEL, kHv), -XEN_EINVAL);
        check("wrmsr IA32_GS_BASE, hypervisor slot: #GP on pvmmu", trap_of(c_wrmsr, kMsrGs, kHv), 13);
        check("  the base as it was", base_msr(kMsrGs) == fs, 1);
    }
    check("set_segment_base(SEGBASE_FS, 0)", set_base(SEGBASE_FS, 0), 0);
    check("set_segment_base(SEGBASE_GS_KERNEL, 0)", set_base(SEGBASE_GS_KERNEL, 0), 0);
    check("set_segment_base(SEGBASE_GS_USER, 0)", set_base(SEGBASE_GS_USER, 0), 0);
    check("  rdmsr of the three: 0", long(base_msr(kMsrFs) | base_msr(kMsrGs) | base_msr(kMsrShadowGs)), 0);
}

// Like check, with what came when it is not what Xen gives.
void checkx(const char* what, uint64_t got, uint64_t want)
{
    check(what, got == want, 1);
    if (got == want) return;
    write("  got ");
    write_hex(got);
    write(", want ");
    write_hex(want);
    write("\n");
}

long set_dr(unsigned reg, uint64_t v) { return hypercall(__HYPERVISOR_set_debugreg, reg, v); }
long get_dr(unsigned reg) { return hypercall(__HYPERVISOR_get_debugreg, reg); }

// DR7 fields ("Debug Control Register"): Ln is bit 2n; RW and LEN of
// breakpoint n in bits 16 + 4n (RW 00 execute, 01 write, 11 read/write,
// 10 I/O) and 18 + 4n (LEN 00 1 byte, 01 2, 11 4, 10 8).
constexpr uint64_t dr7_bp(unsigned n, unsigned rw, unsigned len)
{
    return (1ull << (2 * n)) | (uint64_t(rw | len << 2) << (16 + 4 * n));
}
constexpr uint64_t kDr6Default = 0xffff0ff0, kDr7Default = 0x400, kDr6Bs = 1u << 14;
constexpr uint64_t kCr4De = 1u << 3;

alignas(8) volatile uint32_t g_watched;
alignas(16) xen_extraversion_t g_version_buf;

// set_debugreg / get_debugreg and mov to and from %drN: Xen's checks, and
// real breakpoints delivered to the #DB handler with the virtual DR6.
void debug_registers()
{
    checkx("get_debugreg(7) at start", get_dr(7), kDr7Default);
    checkx("get_debugreg(6) at start", get_dr(6), kDr6Default);
    check("set_debugreg(0, a hypervisor address): -EPERM", set_dr(0, 0xffff800000000000), -XEN_EPERM);
    check("set_debugreg(3, non-canonical): -EPERM", set_dr(3, 0x0000800000000000), -XEN_EPERM);
    check("set_debugreg(6, above 32 bits): -EINVAL", set_dr(6, 1ull << 32), -XEN_EINVAL);
    check("set_debugreg(7, above 32 bits): -EINVAL", set_dr(7, 1ull << 32), -XEN_EINVAL);
    check("set_debugreg(7, an I/O breakpoint without CR4.DE): -EPERM", set_dr(7, dr7_bp(0, 2, 0)), -XEN_EPERM);
    check("set_debugreg(8): -ENODEV", set_dr(8, 0), -XEN_ENODEV);
    check("get_debugreg(8): -ENODEV", get_dr(8), -XEN_ENODEV);
    check("set_debugreg(7, its reserved bits)", set_dr(7, 0xd800), 0);
    checkx("  read back: bit 10 set, 11, 12, 14, 15 clear", get_dr(7), kDr7Default);
    check("set_debugreg(6, 0)", set_dr(6, 0), 0);
    checkx("  read back: the reset value", get_dr(6), kDr6Default);
    check("set_debugreg(1, a guest address)", set_dr(1, 0x1234), 0);
    checkx("  get_debugreg(1)", get_dr(1), 0x1234);

    uint64_t v = 0;
    check("mov to %dr0: emulated", trap_of(c_wr_dr0, 0x5678), kNoTrap);
    checkx("  get_debugreg(0)", get_dr(0), 0x5678);
    check("mov %dr0: emulated", trap_of(c_rd_dr0, 0, 0, &v), kNoTrap);
    checkx("  the value", v, 0x5678);
    check("mov %dr7: emulated", trap_of(c_rd_dr7, 0, 0, &v), kNoTrap);
    checkx("  the value", v, kDr7Default);
    check("mov to %dr0 of a hypervisor address: #GP", trap_of(c_wr_dr0, 0xffff830000000000), 13);
    check("  error code 0", long(conform_w[0]), 0);
    checkx("  %dr0 unchanged", get_dr(0), 0x5678);
    check("mov to %dr7 above 32 bits: #GP", trap_of(c_wr_dr7, 1ull << 40), 13);
    check("mov %dr8: #UD", trap_of(c_rd_dr8), 6);
    check("mov %dr4 without CR4.DE: %dr6", trap_of(c_rd_dr4, 0, 0, &v), kNoTrap);
    checkx("  the value", v, kDr6Default);

    // CR4.DE, a bit the guest controls: DR4 and DR5 are gone while it is set.
    uint64_t cr4 = 0;
    trap_of(c_rd_cr4, 0, 0, &cr4);
    check("mov to %cr4 setting DE: emulated", trap_of(c_wr_cr4, cr4 | kCr4De), kNoTrap);
    trap_of(c_rd_cr4, 0, 0, &v);
    checkx("  %cr4: DE set, the rest as before", v, cr4 | kCr4De);
    check("  mov %dr4: #UD", trap_of(c_rd_dr4), 6);
    check("  get_debugreg(4): -ENODEV", get_dr(4), -XEN_ENODEV);
    check("  set_debugreg(7, an I/O breakpoint) with DE", set_dr(7, dr7_bp(0, 2, 0)), 0);
    checkx("  get_debugreg(7) shows it", get_dr(7), kDr7Default | dr7_bp(0, 2, 0));
    check("  set_debugreg(7, 0)", set_dr(7, 0), 0);
    check("mov to %cr4 clearing DE: emulated", trap_of(c_wr_cr4, cr4 & ~kCr4De), kNoTrap);
    trap_of(c_rd_cr4, 0, 0, &v);
    checkx("  %cr4 as before", v, cr4 & ~kCr4De);
    check("mov to %cr4 changing a bit Xen keeps (PGE): ignored", trap_of(c_wr_cr4, cr4 ^ (1u << 7)), kNoTrap);
    trap_of(c_rd_cr4, 0, 0, &v);
    checkx("  %cr4 as before", v, cr4);

    // A data breakpoint: the store traps after it, B0 in DR6.
    check("set_debugreg(0, &watched)", set_dr(0, uint64_t(&g_watched)), 0);
    check("set_debugreg(7, write of 4 bytes at DR0)", set_dr(7, dr7_bp(0, 1, 3)), 0);
    checkx("  get_debugreg(7)", get_dr(7), kDr7Default | dr7_bp(0, 1, 3));
    check("a store to the watched word: #DB", trap_of(c_store, uint64_t(&g_watched), 5), 1);
    check("  after the store", conform_w[0] == uint64_t(c_store_end) && g_watched == 5, 1);
    checkx("  DR6: B0", get_dr(6) & (0xf | kDr6Bs), 1);
    check("  set_debugreg(6, 0)", set_dr(6, 0), 0);
    check("a load of it: runs", trap_of(c_load, uint64_t(&g_watched)), kNoTrap);
    // The hypervisor writing the watched memory for a hypercall: nothing
    // for the guest to see, and the hypervisor goes on.
    check("set_debugreg(0, a hypercall's buffer)", set_dr(0, uint64_t(&g_version_buf)), 0);
    conform_vector = kNoTrap;
    check("xen_version into the watched buffer",
          hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, uint64_t(&g_version_buf)), 0);
    check("  no #DB for the guest", conform_vector, kNoTrap);
    checkx("  DR6: no hit", get_dr(6) & (0xf | kDr6Bs), 0);

    // An instruction breakpoint: a fault, RIP at the instruction.
    check("set_debugreg(1, an instruction)", set_dr(1, uint64_t(c_bp_target)), 0);
    check("set_debugreg(7, execute at DR1)", set_dr(7, dr7_bp(1, 0, 0)), 0);
    check("calling it: #DB", trap_of(c_bp_target), 1);
    check("  RIP at the instruction", conform_w[0] == uint64_t(c_bp_target), 1);
    checkx("  DR6: B1", get_dr(6) & (0xf | kDr6Bs), 2);
    check("set_debugreg(7, 0)", set_dr(7, 0), 0);
    check("  calling it: runs", trap_of(c_bp_target), kNoTrap);
    check("  set_debugreg(6, 0)", set_dr(6, 0), 0);

    // Single step: the #DB after the instruction, BS in DR6; after an
    // emulated instruction too.
    check("TF: #DB", trap_of(c_step), 1);
    checkx("  after the next instruction", conform_w[0], uint64_t(c_step_end));
    checkx("  DR6: BS", get_dr(6) & (0xf | kDr6Bs), kDr6Bs);
    check("  set_debugreg(6, 0)", set_dr(6, 0), 0);
    check("TF over mov %cr0: #DB", trap_of(c_step_emul), 1);
    check("  after the emulated instruction", conform_w[0] == uint64_t(c_step_emul_end), 1);
    checkx("  DR6: BS", get_dr(6) & (0xf | kDr6Bs), kDr6Bs);
    check("  set_debugreg(6, 0)", set_dr(6, 0), 0);
}

// Breakpoints on the words the bounce frame of the next event is written to:
// that event's delivery writes them from the hypervisor (for a #DB, from
// its IST stack), which must go on; the guest sees the event itself. The
// guest's own code must not write them while they are watched: c_armed sets
// DR7 right before the event, and DR7 is cleared first thing after it, by
// a call no deeper than trap_of's.
void watched_bounce_frame()
{
    trap_of(c_nop);   // conform_rsp at this depth
    // The snippet runs at conform_rsp - 8; the frame's lowest four words
    // (RCX, R11, RIP, CS), well below what the snippet itself pushes.
    const uint64_t frame = ((conform_rsp - 8) & ~15ull) - 7 * 8;
    for (unsigned n = 0; n < 4; ++n) set_dr(n, frame + 8 * n);
    const uint64_t dr7 = dr7_bp(0, 1, 2) | dr7_bp(1, 1, 2) | dr7_bp(2, 1, 2) | dr7_bp(3, 1, 2);
    const uint64_t step = trap_of(c_armed, dr7, uint64_t(c_step));
    const uint64_t rip = conform_w[0];
    set_dr(7, 0);
    check("TF with the #DB's bounce frame watched: #DB", step, 1);
    checkx("  after the next instruction", rip, uint64_t(c_step_end));
    // A second #DB in the hypervisor on the same IST stack would overwrite
    // the first one's frame, the guest's registers in it included.
    checkx("  the guest's registers as they were (R12)", conform_r12, 0x5a5a1234);
    const uint64_t bp = trap_of(c_armed, dr7, uint64_t(c_int3));
    set_dr(7, 0);
    check("int3 with its bounce frame watched: #BP", bp, 3);
    check("  set_debugreg(6, 0)", set_dr(6, 0), 0);
}

long set_iopl(uint32_t iopl)
{
    physdev_set_iopl_t s{iopl};
    return hypercall(__HYPERVISOR_physdev_op, PHYSDEVOP_set_iopl, uint64_t(&s));
}

// Port I/O: #GP until PHYSDEVOP_set_iopl raises the virtual IOPL to the
// kernel's 1; then a port no one has reads as all ones.
void port_io(bool pvmmu)
{
    constexpr uint64_t kPort = 0x1e0;   // no device there, under QEMU
    check("set_iopl(4): -EINVAL", set_iopl(4), -XEN_EINVAL);
    check("physdev_op(set_iopl, unmapped): -EFAULT",
          hypercall(__HYPERVISOR_physdev_op, PHYSDEVOP_set_iopl, XENPV_VIRT_BASE + (1ull << 38)), -XEN_EFAULT);
    check("physdev_op(1000): -ENOSYS", hypercall(__HYPERVISOR_physdev_op, 1000, 0), -XEN_ENOSYS);
    if (pvmmu)
        check("physdev_op(PHYSDEVOP_eoi): -ENOSYS on pvmmu", hypercall(__HYPERVISOR_physdev_op, PHYSDEVOP_eoi, 0),
              -XEN_ENOSYS);
    check("inb at IOPL 0: #GP", trap_of(c_inb, kPort), 13);
    check("  error code 0", long(conform_w[0]), 0);
    check("outb at IOPL 0: #GP", trap_of(c_outb, kPort, 0), 13);
    check("cli at IOPL 0: #GP", trap_of(c_cli), 13);
    check("sti at IOPL 0: #GP", trap_of(c_sti), 13);

    check("set_iopl(1)", set_iopl(1), 0);
    uint64_t v = 0;
    check("inb: emulated", trap_of(c_inb, kPort, 0, &v), kNoTrap);
    checkx("  all ones in AL", v, 0xff);
    check("inw: emulated", trap_of(c_inw, kPort, 0, &v), kNoTrap);
    checkx("  all ones in AX, the rest of EAX kept", v, 0x1234ffff);
    check("inl: emulated", trap_of(c_inl, kPort, 0, &v), kNoTrap);
    checkx("  all ones in EAX, zero-extended", v, 0xffffffff);
    check("outb: emulated", trap_of(c_outb, kPort, 0x5a), kNoTrap);
    check("outl to 0xcf8: emulated", trap_of(c_outl, 0xcf8, 0x80000010), kNoTrap);
    check("inl from 0xcf8: emulated", trap_of(c_inl, 0xcf8, 0, &v), kNoTrap);
    checkx("  what was written", v, 0x80000010);
    trap_of(c_outl, 0xcf8, 0);
    uint8_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    check("rep insb of 5: emulated", trap_of(c_rep_insb, uint64_t(buf), 5, &v, kPort), kNoTrap);
    check("  RCX 0, five bytes of all ones, the next untouched",
          v == 0 && buf[0] == 0xff && buf[4] == 0xff && buf[5] == 6, 1);
    check("rep outsb of 8: emulated", trap_of(c_rep_outsb, uint64_t(buf), 8, &v, kPort), kNoTrap);
    check("  RCX 0", long(v), 0);
    // An element outside the guest's part of the address space is #GP(0),
    // non-canonical or in the hypervisor's slots alike (as Xen 4.17 does),
    // and CR2 is not touched (before, pvmmu delivered a #PF with whatever
    // CR2 the CPU held last).
    trap_of(c_wr_cr2, 0x5a5a000);
    check("rep insb at a non-canonical address: #GP", trap_of(c_rep_insb, 0x8000000000000000, 1, &v, kPort), 13);
    check("rep insb into L4 slot 257: #GP", trap_of(c_rep_insb, 0xffff808000000000, 1, &v, kPort), 13);
    check("rep outsb from L4 slot 257: #GP", trap_of(c_rep_outsb, 0xffff808000000000, 1, &v, kPort), 13);
    uint64_t cr2 = 0;
    trap_of(c_rd_cr2, 0, 0, &cr2);
    checkx("  %cr2 untouched", cr2, 0x5a5a000);
    // An I/O breakpoint (CR4.DE, RW 10): emulated port accesses meet it,
    // and the #DB comes after the instruction, Bn in DR6.
    uint64_t cr4 = 0;
    trap_of(c_rd_cr4, 0, 0, &cr4);
    trap_of(c_wr_cr4, cr4 | kCr4De);
    check("set_debugreg(2, the port)", set_dr(2, kPort + 1), 0);
    check("set_debugreg(7, I/O of 2 bytes at DR2)", set_dr(7, dr7_bp(2, 2, 1)), 0);
    check("inb of the breakpoint's first port: #DB", trap_of(c_inb, kPort), 1);
    check("  after the instruction", conform_w[0] == uint64_t(c_inb_end), 1);
    checkx("  DR6: B2", get_dr(6) & (0xf | kDr6Bs), 4);
    check("inb of the port before it: runs", trap_of(c_inb, kPort - 1), kNoTrap);
    check("set_debugreg(7, 0)", set_dr(7, 0), 0);
    check("set_debugreg(6, 0)", set_dr(6, 0), 0);
    trap_of(c_wr_cr4, cr4);
    check("cli: emulated", trap_of(c_cli), kNoTrap);
    check("sti: emulated", trap_of(c_sti), kNoTrap);
    check("set_iopl(0)", set_iopl(0), 0);
    check("inb at IOPL 0 again: #GP", trap_of(c_inb, kPort), 13);
}

// mov to %cr3: the machine frame of an L4 of the domain, as NEW_BASEPTR.
void write_cr3(const start_info_t* si, uint64_t free)
{
    const uint64_t l4 = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    uint64_t v = 0;
    check("mov to %cr3 of the L4 in use: emulated", trap_of(c_wr_cr3, xen_pfn_to_cr3(l4)), kNoTrap);
    trap_of(c_rd_cr3, 0, 0, &v);
    check("  %cr3 the same", v == xen_pfn_to_cr3(l4), 1);
    check("mov to %cr3 of a writable frame: #GP", trap_of(c_wr_cr3, xen_pfn_to_cr3(p2m(si)[free])), 13);
    check("  error code 0", long(conform_w[0]), 0);
    check("mov to %cr3 of a frame that is not there: #GP", trap_of(c_wr_cr3, 0xfffffffff000), 13);
    trap_of(c_rd_cr3, 0, 0, &v);
    check("  %cr3 unchanged", v == xen_pfn_to_cr3(l4), 1);
}

void hypercalls(bool pvmmu)
{
    check("vm_assist of type 6: -EINVAL", hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, 6), -XEN_EINVAL);
    check("vm_assist of type 64: -EINVAL", hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, 64), -XEN_EINVAL);
    check("vm_assist command 2: -ENOSYS", hypercall(__HYPERVISOR_vm_assist, 2, VMASST_TYPE_pae_extended_cr3),
          -XEN_ENOSYS);
    check("vm_assist enable pae_extended_cr3",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, VMASST_TYPE_pae_extended_cr3), 0);
    check("vm_assist disable pae_extended_cr3",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_disable, VMASST_TYPE_pae_extended_cr3), 0);
    // Commands Xen's prototypes declare int (and vCPU ids unsigned int): the
    // registers' high halves are not looked at.
    constexpr uint64_t kHigh = 1ull << 32;
    check("sched_op(SCHEDOP_yield + 2^32): yields", hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield | kHigh, 0), 0);
    check("vcpu_op(VCPUOP_is_up + 2^32, vCPU 0 + 2^32): up",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up | kHigh, kHigh, 0), 1);
    check("xen_version(XENVER_version + 2^32): 4.17", hypercall(__HYPERVISOR_xen_version, XENVER_version | kHigh, 0),
          hypercall(__HYPERVISOR_xen_version, XENVER_version, 0));
    check("callback_op(3 + 2^32): -ENOSYS", hypercall(__HYPERVISOR_callback_op, 3 | kHigh, 0), -XEN_ENOSYS);
    // Writable page tables are always on for a 64-bit PV guest (pt_writes).
    check("vm_assist enable writable_pagetables",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, VMASST_TYPE_writable_pagetables), 0);
    (void)pvmmu;
}

// Descriptors ("Segment Descriptors", SDM Vol. 3A) both Xen and pvmmu take
// or refuse alike.
constexpr uint64_t kDescP = 1ull << 47;
constexpr uint64_t kDescData3 = 0x00cff2000000ffff;   // data, read/write, DPL 3
constexpr uint64_t kDescTss3 = 0x0000e90000000067;    // 64-bit TSS, DPL 3
constexpr uint64_t kDescIntr3 = 0x0000ee0000000000;   // 64-bit interrupt gate, DPL 3
constexpr uint16_t kSelEntry1 = 0x0b;                 // GDT entry 1, RPL 3
constexpr uint64_t kDescDpl = 3ull << 45;
constexpr uint64_t kDescCode32 = 0x00cffa000000ffff;  // 32-bit code, readable, DPL 3

alignas(4096) uint64_t g_gdt_page[512];    // the GDT frame
alignas(4096) uint64_t g_plain_page[512];  // a frame that stays writable

long update_descriptor(uint64_t maddr, uint64_t desc)
{
    return hypercall(__HYPERVISOR_update_descriptor, maddr, desc);
}

void update_descriptor_checks(const start_info_t* si, bool pvmmu)
{
    const uint64_t va = uint64_t(g_gdt_page);
    const xen_pfn_t mfn = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    const uint64_t entry1 = (mfn << 12) + 8;
    // Xen's set_gdt takes a frame no writable mapping names.
    check("the GDT frame mapped read-only",
          hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL), 0);
    const xen_pfn_t frames[1] = {mfn};
    check("set_gdt of 4 null entries", hypercall(__HYPERVISOR_set_gdt, uint64_t(frames), 4), 0);
    check("selector 0x0b, a null entry: #GP", trap_of(c_load_es, kSelEntry1), 13);
    check("  error code: the selector", long(conform_w[0]), 8);

    check("update_descriptor of entry 1: a DPL-3 data segment", update_descriptor(entry1, kDescData3), 0);
    check("  in the frame", g_gdt_page[1] == kDescData3, 1);
    check("  selector 0x0b loads", trap_of(c_load_es, kSelEntry1), kNoTrap);
    check("update_descriptor of entry 1: not present", update_descriptor(entry1, kDescData3 & ~kDescP), 0);
    check("  selector 0x0b: #NP", trap_of(c_load_es, kSelEntry1), 11);
    check("  error code: the selector", long(conform_w[0]), 8);

    check("update_descriptor at a misaligned address: -EINVAL", update_descriptor(entry1 + 4, kDescData3), -XEN_EINVAL);
    check("update_descriptor of a TSS: -EINVAL", update_descriptor(entry1, kDescTss3), -XEN_EINVAL);
    check("update_descriptor of an interrupt gate: -EINVAL", update_descriptor(entry1, kDescIntr3), -XEN_EINVAL);
    // Xen's rule (and pvmmu's, hypervisor/arch/x86_64/pv/descriptors.cc): a DPL below 3 raised to 3, in
    // the frame too; 32-bit code, any descriptor not present taken as it is.
    check("update_descriptor of DPL-0 data", update_descriptor(entry1, kDescData3 & ~kDescDpl), 0);
    check("  the frame holds it with DPL 3", g_gdt_page[1] == kDescData3, 1);
    check("  selector 0x0b loads", trap_of(c_load_es, kSelEntry1), kNoTrap);
    check("update_descriptor of DPL-0 32-bit code", update_descriptor(entry1, kDescCode32 & ~kDescDpl), 0);
    check("  the frame holds it with DPL 3", g_gdt_page[1] == kDescCode32, 1);
    check("update_descriptor of a TSS not present", update_descriptor(entry1, kDescTss3 & ~kDescP & ~kDescDpl), 0);
    check("  the frame holds it as it was", g_gdt_page[1] == (kDescTss3 & ~kDescP & ~kDescDpl), 1);
    // A call gate to guest code: Xen takes it (stored with DPL 0, so its
    // use faults into Xen, which emulates the far call); pvmmu emulates no
    // far call and refuses it (docs/abi.md §11).
    check(pvmmu ? "update_descriptor of a call gate: -EINVAL on pvmmu" : "update_descriptor of a call gate: Xen takes it",
          update_descriptor(entry1, 0x0000ec0000000000 | (uint64_t(FLAT_RING3_CS64) << 16)), pvmmu ? -XEN_EINVAL : 0);
    check("update_descriptor of entry 1: not present again", update_descriptor(entry1, kDescData3 & ~kDescP), 0);
    check("update_descriptor beyond memory: -EINVAL", update_descriptor(1ull << 52, kDescData3), -XEN_EINVAL);
    uint64_t other = 0;   // Xen's: below its first megabyte, no domain's
    if (pvmmu) {
        pvmmu_facts f{};
        check("pvmmu_op(PVMMUOP_facts)", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&f)), 0);
        other = f.hypervisor_mfn;
    }
    check("update_descriptor of a frame not ours: -EINVAL", update_descriptor((other << 12) + 8, kDescData3),
          -XEN_EINVAL);
    const xen_pfn_t l4 = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    check("update_descriptor of the L4 in use: -EINVAL", update_descriptor((l4 << 12) + 8, kDescData3), -XEN_EINVAL);
    check("  the refusals changed nothing: entry 1 still not present",
          g_gdt_page[1] == (kDescData3 & ~kDescP) && trap_of(c_load_es, kSelEntry1) == 11, 1);

    const xen_pfn_t plain = p2m(si)[(uint64_t(g_plain_page) - XENPV_VIRT_BASE) >> 12];
    check("update_descriptor of a frame mapped writable", update_descriptor((plain << 12) + 16, kDescData3), 0);
    check("  in the frame", g_plain_page[2] == kDescData3, 1);

    check("set_gdt of no entries", hypercall(__HYPERVISOR_set_gdt, uint64_t(frames), 0), 0);
    check("the GDT frame writable again",
          hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x67, UVMF_INVLPG | UVMF_LOCAL), 0);
}

// MMUEXT_SET_LDT (<xen/xen.h>: linear_addr page-aligned, nr_ents at most
// 8192): misaligned, too many entries, an address in the hypervisor's range
// or not canonical: -EINVAL; 0 entries clears the LDT whatever the address
// (alone and in a multicall, as Linux does at boot), and a TI=1 selector is
// then #GP. An LDT on a read-only page: a data descriptor of it loads into
// %es and %fs through a TI=1 selector, %fs reads through its base; a
// selector past nr_ents or naming its null entry 0 is #GP; update_descriptor
// of the LDT frame reaches the LDT (#NP once not present).
// SEGBASE_GS_USER_SEL: the selector (RPL 3) into %gs and its descriptor's
// base into the user %gs base (rdmsr IA32_KERNEL_GS_BASE), the kernel's kept;
// a selector the CPU refuses (past the LDT, not present) loaded as null with
// base 0, and still 0. A writable LDT page: Xen takes SET_LDT and the load
// faults (#PF, its lazy mapping); pvmmu copies at SET_LDT time and refuses it
// there (-EINVAL, docs/abi.md §11), as it refuses a TSS in it or a page not
// mapped (-EFAULT). While Xen has an LDT page mapped, a writable mapping of
// it is -EBUSY; pvmmu, which copied it, takes one.
alignas(4096) uint64_t g_ldt_page[512];
constexpr uint16_t kSelLdt0 = 0x07, kSelLdt1 = 0x0f, kSelLdt2 = 0x17;   // TI = 1, RPL 3
constexpr uint32_t kLdtDescBase = 0x12345000;

// kDescData3 with base b ("Segment Descriptors": base 23:0 in bits 39:16,
// 31:24 in 63:56).
constexpr uint64_t data3_at(uint32_t b)
{
    return kDescData3 | (uint64_t(b & 0xffffff) << 16) | (uint64_t(b >> 24) << 56);
}

long set_ldt(uint64_t va, uint32_t ents)
{
    mmuext_op_t op{};
    op.cmd = MMUEXT_SET_LDT;
    op.arg1.linear_addr = va;
    op.arg2.nr_ents = ents;
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

uint64_t gs_sel()
{
    uint64_t v = 0;
    return trap_of(c_gs_sel, 0, 0, &v) == kNoTrap ? v : ~0ull;
}

void ldt_checks(const start_info_t* si, bool pvmmu)
{
    const uint64_t va = uint64_t(g_ldt_page);
    const xen_pfn_t mfn = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    g_ldt_page[1] = data3_at(kLdtDescBase);
    check("SET_LDT at a misaligned address: -EINVAL", set_ldt(va + 8, 2), -XEN_EINVAL);
    check("SET_LDT of 8193 entries: -EINVAL", set_ldt(va, 8193), -XEN_EINVAL);
    check("SET_LDT in the hypervisor's range: -EINVAL", set_ldt(0xffff800000000000, 2), -XEN_EINVAL);
    check("SET_LDT at a non-canonical address: -EINVAL", set_ldt(kNonCanonical, 2), -XEN_EINVAL);
    check("SET_LDT of 0 entries, the address misaligned: 0", set_ldt(va + 8, 0), 0);
    static mmuext_op_t op;
    op.cmd = MMUEXT_SET_LDT;
    static multicall_entry_t mc;
    mc.op = __HYPERVISOR_mmuext_op;
    mc.args[0] = uint64_t(&op);
    mc.args[1] = 1;
    mc.args[3] = DOMID_SELF;
    check("SET_LDT(0, 0) in a multicall", hypercall(__HYPERVISOR_multicall, uint64_t(&mc), 1) == 0 && mc.result == 0, 1);
    check("  selector 0x0f, no LDT: #GP", trap_of(c_load_es, kSelLdt1), 13);
    check("  error code: the selector", long(conform_w[0]), kSelLdt1 & ~3);

    check("the LDT frame mapped read-only",
          hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL), 0);
    check("SET_LDT of 2 entries", set_ldt(va, 2), 0);
    check("  selector 0x0f loads into %es", trap_of(c_load_es, kSelLdt1), kNoTrap);
    uint64_t v = 0;
    check("  and into %fs", trap_of(c_fs_read, kSelLdt1, uint64_t(&g_fs_word) - kLdtDescBase, &v), kNoTrap);
    check("  %fs reads through its base", v == g_fs_word, 1);
    check("  selector 0x17, past 2 entries: #GP", trap_of(c_load_es, kSelLdt2), 13);
    check("  error code: the selector", long(conform_w[0]), kSelLdt2 & ~3);
    check("  selector 0x07, the null entry 0: #GP", trap_of(c_load_es, kSelLdt0), 13);
    check("update_descriptor of LDT entry 1: not present",
          update_descriptor((mfn << 12) + 8, data3_at(kLdtDescBase) & ~kDescP), 0);
    check("  selector 0x0f: #NP", trap_of(c_load_es, kSelLdt1), 11);
    check("  error code: the selector", long(conform_w[0]), kSelLdt1 & ~3);

    check("set_segment_base(SEGBASE_GS_KERNEL)", set_base(SEGBASE_GS_KERNEL, uint64_t(&g_gs_word)), 0);
    check("set_segment_base(SEGBASE_GS_USER_SEL, LDT entry 1 not present): 0", set_base(SEGBASE_GS_USER_SEL, kSelLdt1), 0);
    check("  %gs null", long(gs_sel()), 0);
    check("update_descriptor of LDT entry 1: present", update_descriptor((mfn << 12) + 8, data3_at(kLdtDescBase)), 0);
    check("set_segment_base(SEGBASE_GS_USER_SEL, LDT entry 1, RPL 0): 0", set_base(SEGBASE_GS_USER_SEL, kSelLdt1 & ~3), 0);
    check("  %gs holds it with RPL 3", long(gs_sel()), kSelLdt1);
    check("  rdmsr IA32_KERNEL_GS_BASE: the descriptor's base", base_msr(kMsrShadowGs) == kLdtDescBase, 1);
    check("  the kernel's %gs base kept", base_msr(kMsrGs) == uint64_t(&g_gs_word) && through(c_rd_gs) == g_gs_word, 1);
    check("set_segment_base(SEGBASE_GS_USER_SEL, past the LDT): 0", set_base(SEGBASE_GS_USER_SEL, kSelLdt2), 0);
    check("  %gs null", long(gs_sel()), 0);
    check("  the user %gs base 0", long(base_msr(kMsrShadowGs)), 0);
    check("  the kernel's %gs base kept", through(c_rd_gs) == g_gs_word, 1);
    check("set_segment_base(SEGBASE_GS_USER_SEL, FLAT_RING3_DS64): 0", set_base(SEGBASE_GS_USER_SEL, FLAT_RING3_DS64), 0);
    check("  %gs holds it", long(gs_sel()), FLAT_RING3_DS64);
    check("set_segment_base(SEGBASE_GS_USER_SEL, 0): 0", set_base(SEGBASE_GS_USER_SEL, 0), 0);
    check("  %gs null", long(gs_sel()), 0);
    check("set_segment_base(SEGBASE_GS_KERNEL, 0)", set_base(SEGBASE_GS_KERNEL, 0), 0);

    if (pvmmu) {
        constexpr uint64_t kUnmapped = XENPV_VIRT_BASE + (1ull << 38);
        check("SET_LDT of a page not mapped: -EFAULT on pvmmu", set_ldt(kUnmapped, 1), -XEN_EFAULT);
        check("the LDT frame writable", hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x67,
                                                  UVMF_INVLPG | UVMF_LOCAL), 0);
        g_ldt_page[1] = kDescTss3;
        check("the LDT frame read-only", hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x65,
                                                   UVMF_INVLPG | UVMF_LOCAL), 0);
        check("SET_LDT of a TSS descriptor: -EINVAL on pvmmu", set_ldt(va, 2), -XEN_EINVAL);
        check("  the LDT in use unchanged: 0x0f loads", trap_of(c_load_es, kSelLdt1), kNoTrap);
    }
    // Xen's LDT mapping holds the frame's descriptor type: no writable
    // mapping of it while it is the LDT in use (pvmmu: a copy, see above).
    if (!pvmmu) {
        check("  0x0f loads (Xen maps the LDT page)", trap_of(c_load_es, kSelLdt1), kNoTrap);
        check("the LDT frame mapped writable while in use: -EBUSY on Xen",
              hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x67, UVMF_INVLPG | UVMF_LOCAL), -XEN_EBUSY);
        check("  a write to it: #PF", trap_of(c_store, va + 16, 0), 14);
    }
    check("SET_LDT of 0 entries", set_ldt(0, 0), 0);
    check("the LDT frame writable", hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x67,
                                              UVMF_INVLPG | UVMF_LOCAL), 0);
    g_ldt_page[1] = data3_at(kLdtDescBase);
    if (pvmmu) {
        check("SET_LDT of a writable page: -EINVAL on pvmmu", set_ldt(va, 2), -XEN_EINVAL);
        check("  no LDT still: 0x0f #GP", trap_of(c_load_es, kSelLdt1), 13);
    } else {
        check("SET_LDT of a writable page: 0 on Xen", set_ldt(va, 2), 0);
        check("  selector 0x0f: #PF on Xen", trap_of(c_load_es, kSelLdt1), 14);
    }
    check("SET_LDT of 0 entries", set_ldt(0, 0), 0);
    check("  selector 0x0f: #GP", trap_of(c_load_es, kSelLdt1), 13);
}

// Multicalls of the hypercalls a PV kernel batches (Linux's xen_mc_*:
// descriptors, the kernel stack, TS, segment bases, with MMU updates):
// each entry runs as the same call made directly, its result in its entry,
// a failing one does not stop the list; a multicall inside one is -EINVAL.
// An entry that is continued (a long set_trap_table) finishes before the
// next runs. An iret entry replaces the guest's registers and ends the
// list there, its result the multicall's (Xen's mc_exit).
constexpr uint64_t kUnrun = 0x5a5a5a5a;   // an entry's result before it runs
alignas(64) multicall_entry_t g_mc[12];
alignas(16) uint8_t g_mc_stack[4096];
trap_info_t g_long_table[201];

void mc_entry(unsigned i, unsigned op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0, uint64_t a3 = 0)
{
    g_mc[i] = multicall_entry_t{};
    g_mc[i].op = op;
    g_mc[i].result = kUnrun;
    g_mc[i].args[0] = a0, g_mc[i].args[1] = a1, g_mc[i].args[2] = a2, g_mc[i].args[3] = a3;
}

long multicall(unsigned n) { return hypercall(__HYPERVISOR_multicall, uint64_t(g_mc), n); }

// Each entry's result as `want` says; names the first that is not.
void mc_results(const char* what, const long* want, unsigned n)
{
    for (unsigned i = 0; i < n; ++i) {
        if (long(g_mc[i].result) == want[i]) continue;
        write("  entry ");
        write_hex(i);
        write(": result ");
        write_hex(g_mc[i].result);
        write(", want ");
        write_hex(uint64_t(want[i]));
        write("\n");
        check(what, 0, 1);
        return;
    }
    check(what, 1, 1);
}

void multicalls(const start_info_t* si)
{
    const uint64_t va = uint64_t(g_gdt_page);
    const xen_pfn_t mfn = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    const uint64_t entry1 = (mfn << 12) + 8;
    const xen_pfn_t frames[1] = {mfn};
    const long version = hypercall(__HYPERVISOR_xen_version, XENVER_version);
    const uint64_t fs = uint64_t(&g_fs_word);
    mmuext_op_t flush{};
    flush.cmd = MMUEXT_TLB_FLUSH_LOCAL;
    mc_entry(0, __HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL);
    mc_entry(1, __HYPERVISOR_set_gdt, uint64_t(frames), 4);
    mc_entry(2, __HYPERVISOR_update_descriptor, entry1, kDescData3);
    mc_entry(3, __HYPERVISOR_mmuext_op, uint64_t(&flush), 1, 0, DOMID_SELF);
    mc_entry(4, __HYPERVISOR_stack_switch, FLAT_KERNEL_SS, uint64_t(g_mc_stack + sizeof(g_mc_stack)));
    mc_entry(5, __HYPERVISOR_fpu_taskswitch, 1);
    mc_entry(6, __HYPERVISOR_set_segment_base, SEGBASE_FS, fs);
    mc_entry(7, __HYPERVISOR_set_segment_base, SEGBASE_FS, kNonCanonical);
    mc_entry(8, __HYPERVISOR_update_descriptor, entry1 + 4, kDescData3);
    mc_entry(9, __HYPERVISOR_sched_op, SCHEDOP_yield);
    mc_entry(10, __HYPERVISOR_multicall, uint64_t(g_mc), 1);
    mc_entry(11, __HYPERVISOR_xen_version, XENVER_version);
    check("multicall: update_va_mapping, set_gdt, update_descriptor, mmuext_op, stack_switch, fpu_taskswitch, "
          "set_segment_base, sched_op, ...", multicall(12), 0);
    const long want1[] = {0, 0, 0, 0, 0, 0, 0, -XEN_EINVAL, -XEN_EINVAL, 0, -XEN_EINVAL, version};
    mc_results("  each entry's result (a bad segment base and a misaligned descriptor -EINVAL, a nested multicall "
               "-EINVAL)", want1, 12);
    check("  update_descriptor: in the frame", g_gdt_page[1] == kDescData3, 1);
    check("  selector 0x0b loads", trap_of(c_load_es, kSelEntry1), kNoTrap);
    check("  set_segment_base: %fs:0 reads through it", through(c_rd_fs) == g_fs_word, 1);
    check("  the refused base left it", base_msr(kMsrFs) == fs, 1);
    check("  fpu_taskswitch: fnop #NM", trap_of(c_fnop), 7);
    check("  fnop again: runs", trap_of(c_fnop), kNoTrap);
    // Linux's xen_load_sp0: stack_switch(__KERNEL_DS = 0x18, sp0) in a
    // multicall; Xen takes any SS, its RPL forced to 3.
    mc_entry(0, __HYPERVISOR_stack_switch, 0x18, uint64_t(g_mc_stack + sizeof(g_mc_stack)));
    mc_entry(1, __HYPERVISOR_stack_switch, FLAT_KERNEL_SS, uint64_t(g_mc_stack + sizeof(g_mc_stack)));
    check("multicall: stack_switch(0x18, sp) as Linux, then the flat SS", multicall(2), 0);
    const long want_ss[] = {0, 0};
    mc_results("  both 0", want_ss, 2);

    // Back, with mmu_update in the list: the GDT frame writable again.
    const uint64_t l1e = l1_entry_of(si, va);
    mmu_update_t req{l1e | MMU_NORMAL_PT_UPDATE, (mfn << 12) | 0x67};
    unsigned req_done = 0;
    mmuext_op_t invlpg{};
    invlpg.cmd = MMUEXT_INVLPG_LOCAL;
    invlpg.arg1.linear_addr = va;
    const xen_pfn_t plain = p2m(si)[(uint64_t(g_plain_page) - XENPV_VIRT_BASE) >> 12];
    mc_entry(0, __HYPERVISOR_set_segment_base, SEGBASE_FS, 0);
    mc_entry(1, __HYPERVISOR_set_gdt, uint64_t(frames), 0);
    mc_entry(2, __HYPERVISOR_mmu_update, uint64_t(&req), 1, uint64_t(&req_done), DOMID_SELF);
    mc_entry(3, __HYPERVISOR_mmuext_op, uint64_t(&invlpg), 1, 0, DOMID_SELF);
    mc_entry(4, __HYPERVISOR_update_descriptor, (plain << 12) + 24, kDescData3);
    mc_entry(5, __HYPERVISOR_fpu_taskswitch, 0);
    check("multicall: set_segment_base, set_gdt, mmu_update, mmuext_op, update_descriptor, fpu_taskswitch",
          multicall(6), 0);
    const long want2[] = {0, 0, 0, 0, 0, 0};
    mc_results("  each entry's result", want2, 6);
    check("  mmu_update: 1 done", long(req_done), 1);
    check("  the GDT frame writable: a store", trap_of(c_store, uint64_t(&g_gdt_page[3]), 0), kNoTrap);
    check("  update_descriptor of a writable frame: in it", g_plain_page[3] == kDescData3, 1);
    check("  %fs base 0", long(base_msr(kMsrFs)), 0);
    check("  fnop: runs", trap_of(c_fnop), kNoTrap);

    // A set_trap_table entry long enough to be continued (pvmmu: every 64
    // entries; Xen: when it has other work) finishes before the entries
    // after it: vector 0x70 (and its twin 0xe0, see delivered()) is DPL 0
    // early in the list and DPL 3 at its end.
    unsigned n = 0;
    g_long_table[n++] = entry(0x70, 0);
    g_long_table[n++] = entry(0xe0, 0);
    while (n < 198) {
        const unsigned vec = n % 32;
        g_long_table[n] = entry(vec, vec == 3 ? 3 : 0);
        ++n;
    }
    g_long_table[n++] = entry(0x70, 3);
    g_long_table[n++] = entry(0xe0, 3);
    g_long_table[n] = trap_info_t{0, 0, 0, 0};
    mc_entry(0, __HYPERVISOR_set_trap_table, uint64_t(g_long_table));
    mc_entry(1, __HYPERVISOR_xen_version, XENVER_version);
    mc_entry(2, __HYPERVISOR_fpu_taskswitch, 0);
    check("multicall: set_trap_table of 200 entries, xen_version, fpu_taskswitch", multicall(3), 0);
    const long want3[] = {0, version, 0};
    mc_results("  each entry's result", want3, 3);
    check("  int $0x70: delivered (the table's last entries taken)", delivered(0x70), 1);
    check("  int3: #BP", trap_of(c_int3), 3);
    const trap_info_t off[3] = {entry(0x70, 0), entry(0xe0, 0), trap_info_t{0, 0, 0, 0}};
    check("  vector 0x70 DPL 0 again", set_trap_table(off), 0);

    // iret in a multicall, with the CS and RFLAGS of a bounce frame of the
    // kernel (the int3 above: RIP, CS, RFLAGS), as a PV kernel returns.
    conform_iret_cs = conform_w[1];
    conform_iret_rflags = conform_w[2];
    mc_entry(0, __HYPERVISOR_xen_version, XENVER_version);
    mc_entry(1, __HYPERVISOR_iret);
    mc_entry(2, __HYPERVISOR_set_segment_base, SEGBASE_FS, fs);
    uint64_t rax = 0;
    check("multicall: xen_version, iret, set_segment_base: resumed at the iret frame",
          trap_of(conform_mc_iret, uint64_t(g_mc), 3, &rax), kNoTrap);
    check("  RAX: the frame's", long(rax), 0x2222);
    check("  RCX, R11: the frame's", conform_w[0] == uint64_t(conform_mc_iret_ret) && conform_w[1] == 0x1111, 1);
    const long want4[] = {version, 0x2222, long(kUnrun)};
    mc_results("  results: the iret's is the frame's RAX, the entry after it not run", want4, 3);
    check("  %fs base still 0", long(base_msr(kMsrFs)), 0);
}

// Compatibility mode in ring 3 (docs/security.md "Compatibility mode"):
// what a 32-bit code segment opens, on Xen and pvmmu alike. The code page
// c32_page is mapped read-only at kLow (below 4 GiB: EIP is 32-bit there)
// through an L3, L2 and L1 of the guest's own in L4 slot 0, with a stack page
// after it; the iret hypercall goes to it.
// - set_gdt of DPL-0 data and DPL-0 32-bit code: taken, DPL 3 in the frame
//   and in the GDT (LAR).
// - iret to a 32-bit CS (the guest's, FLAT_RING3_CS32): it runs there (a
//   UD2's #UD reports that RIP and CS).
// - SYSCALL there: #UD at the SYSCALL without a syscall32 callback, the
//   callback with RIP after it and CS FLAT_RING3_CS32 with one.
// - SYSENTER there: #GP (Intel) or #UD (AMD), never ring 0.
// - INT $0x80 there (its trap-table entry DPL 3): Xen delivers it; pvmmu
//   emulates nothing from compatibility mode and delivers the #GP.
extern "C" HIDDEN char c32_page[], c32_ud2[], c32_syscall[], c32_sysenter[], c32_int80[], c32_end[], c_lar[],
    c_iret_to[];
alignas(4096) uint64_t g_compat_gdt[512];
constexpr uint64_t kLow = 0x40000000;   // L4 0, L3 1, L2 0, L1 0
constexpr uint16_t kSelCode32 = 0x13;   // GDT entry 2, RPL 3

uint64_t low(const char* p) { return kLow + uint64_t(p - c32_page); }

// Maps c32_page at kLow and a stack page after it; false when L4 slot 0 is taken.
bool map_low(const start_info_t* si, uint64_t free)
{
    const uint64_t* l4 = reinterpret_cast<const uint64_t*>(si->pt_base);
    if (l4[0]) return false;
    const uint64_t l3 = free + 2, l2 = free + 3, l1 = free + 4, stack = free + 5;
    const auto mfn = [&](uint64_t g) { return p2m(si)[g]; };
    const uint64_t fresh[] = {l3, l2, l1, stack}, tables[] = {l3, l2, l1};
    for (uint64_t g : fresh)
        for (unsigned i = 0; i < 512; ++i) gpfn_bytes(g)[i] = 0;
    const uint64_t code = mfn((uint64_t(c32_page) - XENPV_VIRT_BASE) >> 12);
    gpfn_bytes(l1)[0] = (code << 12) | 0x25;          // P, U, A: read-only
    gpfn_bytes(l1)[1] = (mfn(stack) << 12) | 0x67;    // P, RW, U, A, D
    gpfn_bytes(l2)[0] = (mfn(l1) << 12) | 0x67;
    gpfn_bytes(l3)[1] = (mfn(l2) << 12) | 0x67;
    for (uint64_t g : tables) {
        const uint64_t va = XENPV_VIRT_BASE + (g << 12);
        check("  a page-table frame mapped read-only",
              hypercall(__HYPERVISOR_update_va_mapping, va, (mfn(g) << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL), 0);
    }
    const xen_pfn_t l4_mfn = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    mmu_update_t u{(l4_mfn << 12) | MMU_NORMAL_PT_UPDATE, (mfn(l3) << 12) | 0x67};
    check("  L4 slot 0: the L3", hypercall(__HYPERVISOR_mmu_update, uint64_t(&u), 1, 0, DOMID_SELF), 0);
    return true;
}

long callback32(uint32_t cmd, uint64_t address)
{
    callback_register_t r{};
    r.type = CALLBACKTYPE_syscall32;
    r.address = address;
    return hypercall(__HYPERVISOR_callback_op, cmd, uint64_t(&r));
}

// Runs the compat piece p on code selector cs: the vector it ended with.
uint64_t in_compat(uint16_t cs, const char* p)
{
    // RPL 0: the guest's kernel mode, as Xen reads iret's CS (RPL 3 would be
    // a switch to its user mode, which needs user page tables).
    return trap_of(c_iret_to, low(p), cs & ~3u, nullptr, kLow + 0x2000 - 64);
}

void compat_mode(const start_info_t* si, uint64_t free)
{
    const uint64_t va = uint64_t(g_compat_gdt);
    const xen_pfn_t mfn = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    g_compat_gdt[1] = kDescData3 & ~kDescDpl;
    g_compat_gdt[2] = kDescCode32 & ~kDescDpl;
    check("the GDT frame mapped read-only",
          hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL), 0);
    const xen_pfn_t frames[1] = {mfn};
    check("set_gdt of DPL-0 data and DPL-0 32-bit code", hypercall(__HYPERVISOR_set_gdt, uint64_t(frames), 3), 0);
    check("  the frame holds the data with DPL 3", g_compat_gdt[1] == kDescData3, 1);
    check("  the frame holds the code with DPL 3", g_compat_gdt[2] == kDescCode32, 1);
    // LAR: the descriptor's bits 23:8 of its upper word, DPL at 14:13, L and D at 21 and 22.
    check("  LAR of 0x0b: DPL 3", long(conform_call(c_lar, kSelEntry1) >> 13 & 3), 3);
    const uint64_t ar = conform_call(c_lar, kSelCode32);
    checkx("  LAR of 0x13: DPL 3, 32-bit code (D 1, L 0)", ar & 0x606000, 0x406000);
    if (!map_low(si, free)) {
        write("conform guest: L4 slot 0 in use, compatibility mode not tried\n");
        return;
    }
    const uint16_t code32[] = {kSelCode32, uint16_t(FLAT_RING3_CS32)};
    for (uint16_t cs : code32) {
        check("iret to a 32-bit CS, there a UD2: #UD", in_compat(cs, c32_ud2), 6);
        checkx("  at its RIP", conform_w[0], low(c32_ud2));
        checkx("  in that CS", conform_w[1] | 3, cs);
        checkx("SYSCALL there, no syscall32 callback: #UD", in_compat(cs, c32_syscall), 6);
        checkx("  at the SYSCALL", conform_w[0], low(c32_syscall));
    }
    check("CALLBACKOP_register syscall32", callback32(CALLBACKOP_register, uint64_t(conform_stubs + 16 * 0x90)), 0);
    checkx("SYSCALL there: the syscall32 callback", in_compat(kSelCode32, c32_syscall), 0x90);
    checkx("  RIP after the SYSCALL", conform_w[0], low(c32_syscall) + 2);
    checkx("  CS FLAT_RING3_CS32", conform_w[1] | 3, FLAT_RING3_CS32);
    // Xen unregisters only the NMI callback; the others stay (-EINVAL), a
    // type it does not know is -ENOSYS (sysenter_deprecated, sfmask).
    checkx("CALLBACKOP_unregister syscall32: -EINVAL", uint64_t(callback32(CALLBACKOP_unregister, 0)),
           uint64_t(-XEN_EINVAL));
    const long unregister_rc[] = {-XEN_EINVAL, -XEN_EINVAL, -XEN_EINVAL, -XEN_ENOSYS, 0, -XEN_EINVAL, -XEN_ENOSYS,
                                  -XEN_EINVAL, -XEN_ENOSYS};
    for (uint16_t type = 0; type < 9; ++type) {
        callback_unregister_t u{type, 0};
        check("CALLBACKOP_unregister: Xen's errno for the type",
              hypercall(__HYPERVISOR_callback_op, CALLBACKOP_unregister, uint64_t(&u)), unregister_rc[type]);
    }
    const uint64_t sysenter = in_compat(kSelCode32, c32_sysenter);
    checkx("SYSENTER there: #GP or #UD", sysenter == 13 || sysenter == 6 ? 1 : sysenter, 1);
    check("  at the SYSENTER", conform_w[sysenter == 13 ? 1 : 0] == low(c32_sysenter), 1);
    const uint64_t int80 = in_compat(kSelCode32, c32_int80);
    // Xen delivers it on hardware; under QEMU's TCG the #GP names the gate
    // as 0x80 * 16 + 2, which Xen reads as vector 0 (DPL 0): a #GP too
    // (see `delivered`). pvmmu's decoder reads 64-bit code only, so a #GP.
    checkx("INT $0x80 there: #GP (TCG; pvmmu: no emulation in compatibility mode)", int80, 13);
    check("  error code: its IDT entry", conform_w[0] == 0x80 * 8 + 2 || conform_w[0] == 0x80 * 16 + 2, 1);
    checkx("  at the INT", conform_w[1], low(c32_int80));
    checkx("  in that CS", conform_w[2] | 3, kSelCode32);
    check("set_gdt of no entries", hypercall(__HYPERVISOR_set_gdt, uint64_t(frames), 0), 0);
    check("the GDT frame writable again",
          hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | 0x67, UVMF_INVLPG | UVMF_LOCAL), 0);
}

constexpr uint64_t kInvalidM2p = ~0ull;   // Xen's INVALID_M2P_ENTRY: no domain's frame

uint64_t m2p_va(uint64_t mfn) { return MACH2PHYS_VIRT_START + mfn * 8; }

void m2p(const start_info_t* si, bool pvmmu)
{
    xen_machphys_mapping_t m{};
    check("memory_op(XENMEM_machphys_mapping)", hypercall(__HYPERVISOR_memory_op, XENMEM_machphys_mapping, uint64_t(&m)), 0);
    check("  v_start: MACH2PHYS_VIRT_START", m.v_start == MACH2PHYS_VIRT_START, 1);
    check("  v_end: MACH2PHYS_VIRT_END", m.v_end == MACH2PHYS_VIRT_END, 1);
    // Xen tells its hardware domain (the Xen runs here boot the kernel as
    // dom0) max_page - 1, every other domain MACH2PHYS_NR_ENTRIES - 1.
    check("  max_mfn: at most MACH2PHYS_NR_ENTRIES - 1", m.max_mfn <= MACH2PHYS_NR_ENTRIES - 1, 1);
    if (pvmmu) check("  max_mfn on pvmmu: MACH2PHYS_NR_ENTRIES - 1", m.max_mfn == MACH2PHYS_NR_ENTRIES - 1, 1);
    check("memory_op(XENMEM_machphys_mapping) to an unmapped address: -EFAULT",
          hypercall(__HYPERVISOR_memory_op, XENMEM_machphys_mapping, XENPV_VIRT_BASE + (1ull << 38)), -XEN_EFAULT);

    unsigned wrong = 0, trapped = 0;
    for (uint64_t g = 0; g < si->nr_pages; ++g) {
        uint64_t v = 0;
        if (p2m(si)[g] > m.max_mfn || trap_of(c_load, m2p_va(p2m(si)[g]), 0, &v) != kNoTrap) ++trapped;
        else if (v != g) ++wrong;
    }
    check("every frame of ours: its M2P entry loads", trapped, 0);
    check("  and is its gpfn", wrong, 0);

    uint64_t other = si->shared_info >> 12, v = 0;
    if (pvmmu) {
        pvmmu_facts f{};
        check("pvmmu_op(PVMMUOP_facts)", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&f)), 0);
        other = f.hypervisor_mfn;
    }
    check(pvmmu ? "the M2P entry of a hypervisor frame: loads" : "the M2P entry of Xen's shared_info frame: loads",
          trap_of(c_load, m2p_va(other), 0, &v), kNoTrap);
    check("  INVALID_M2P_ENTRY", v == kInvalidM2p, 1);

    const uint64_t mine = m2p_va(p2m(si)[1]);
    check("a store to the M2P: #PF", trap_of(c_store, mine, 0x1234), 14);
    check("  error code: present, write, kernel mode", long(conform_w[0] & 0x1f), 3);
    uint64_t cr2 = 0;
    trap_of(c_rd_cr2, 0, 0, &cr2);
    check("  %cr2: the address", cr2 == mine, 1);
    check("  the entry unchanged", trap_of(c_load, mine, 0, &v) == kNoTrap && v == 1, 1);
}

// memory_op's reporting sub-ops, asked about the caller: its reservation is
// its pages (Xen's dom0 may have a higher maximum), its highest gpfn what
// it told in shared_info, RAM's top above every frame of its own; an id no
// domain has is -ESRCH, an extent on these -EINVAL, a sub-op neither knows
// -ENOSYS.
long memory_op(uint64_t cmd, domid_t id)
{
    xen_memory_domain md{id};
    return hypercall(__HYPERVISOR_memory_op, cmd, uint64_t(&md));
}

void memory_queries(const start_info_t* si, bool pvmmu, uint64_t free_va)
{
    const long cur = memory_op(XENMEM_current_reservation, DOMID_SELF);
    check("XENMEM_current_reservation(DOMID_SELF): nr_pages", cur == long(si->nr_pages), 1);
    const long max = memory_op(XENMEM_maximum_reservation, DOMID_SELF);
    check("XENMEM_maximum_reservation(DOMID_SELF): at least that", max >= cur, 1);
    if (pvmmu) check("  on pvmmu: the same", max == cur, 1);
    // XENMEM_maximum_gpfn is what the guest says in shared_info.arch.max_pfn,
    // less one (0 while unset): shared_info mapped over the page after the
    // initial stack's (mapped on Xen too: it pads the boot region).
    shared_info_t* sh = reinterpret_cast<shared_info_t*>(free_va);
    check("shared_info mapped", hypercall(__HYPERVISOR_update_va_mapping, free_va,
                                          (si->shared_info & ~0xfffull) | 0x67, UVMF_INVLPG | UVMF_LOCAL), 0);
    check("XENMEM_maximum_gpfn(DOMID_SELF), max_pfn unset: 0", sh->arch.max_pfn == 0 &&
          memory_op(XENMEM_maximum_gpfn, DOMID_SELF) == 0, 1);
    sh->arch.max_pfn = si->nr_pages;
    check("XENMEM_maximum_gpfn(DOMID_SELF), max_pfn nr_pages: nr_pages - 1",
          memory_op(XENMEM_maximum_gpfn, DOMID_SELF) == long(si->nr_pages) - 1, 1);
    uint64_t top = 0;
    for (uint64_t g = 0; g < si->nr_pages; ++g) top = p2m(si)[g] > top ? p2m(si)[g] : top;
    check("XENMEM_maximum_ram_page: above every frame of ours",
          hypercall(__HYPERVISOR_memory_op, XENMEM_maximum_ram_page, 0) > long(top), 1);
    check("XENMEM_current_reservation of no domain: -ESRCH", memory_op(XENMEM_current_reservation, 0x7000), -XEN_ESRCH);
    check("XENMEM_current_reservation with an extent: -EINVAL",
          memory_op(XENMEM_current_reservation | (1u << 6), DOMID_SELF), -XEN_EINVAL);
    check("XENMEM_maximum_gpfn from an unmapped address: -EFAULT",
          hypercall(__HYPERVISOR_memory_op, XENMEM_maximum_gpfn, XENPV_VIRT_BASE + (1ull << 38)), -XEN_EFAULT);
    check("memory_op sub-op 63: -ENOSYS", hypercall(__HYPERVISOR_memory_op, 63, 0), -XEN_ENOSYS);
}

// VCPUOP_initialise takes the context's virtual IDT (trap_ctxt[]), as Xen's
// arch_set_info_guest does and Linux's CPU bring-up relies on: vCPU 1,
// started with a #BP handler in its context and no set_trap_table of its
// own, reaches it with INT3 (a DPL-3 gate on both). Before that, a context
// with a non-canonical trap handler, event callback or kernel_sp is -EINVAL
// and leaves vCPU 1 down (VCPUOP_up -EINVAL). So do user mode (flags
// without VGCF_in_kernel) with no user L4 in ctrlreg[1], and a ctrlreg[1]
// that cannot be an L4 (a page mapped writable), as Xen checks it. The
// context that starts names the user L4 of user_mode.cc in ctrlreg[1]
// (vcpu1_user_mode). Booted with 2 vCPUs; with one, a note.
alignas(16) uint8_t g_vcpu1_stack[8192];
alignas(16) uint8_t g_vcpu1_kstack[1024];   // its kernel_sp: entries from user mode

// The runstate (<xen/vcpu.h>), as both answer it: VCPUOP_get_runstate_info
// and VCPUOP_register_runstate_memory_area of the caller and of a vCPU
// down; -EFAULT for an area not in the guest's part of the address space or
// an unwritable info; the area written at once, then at each change of
// state (vcpu_context: vCPU 1 up, then down); times that only grow, and an
// entry time no later than the next reading.
alignas(64) vcpu_runstate_info g_rs0, g_rs1;
volatile int conform_vcpu1_rs_state = -1;   // what vCPU 1 saw in its own area
volatile uint32_t conform_vcpu1_leaf1_ebx = ~0u;   // its CPUID leaf 1 EBX
volatile uint64_t conform_vcpu1_cr0 = 0;           // its mov from %cr0

long runstate_info(unsigned vcpu, vcpu_runstate_info* r)
{
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_get_runstate_info, vcpu, uint64_t(r));
}

long runstate_area(unsigned vcpu, uint64_t va)
{
    vcpu_register_runstate_memory_area a{};
    a.addr.p = va;
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_register_runstate_memory_area, vcpu, uint64_t(&a));
}

// b no earlier than a: every total and the entry time.
bool not_before(const vcpu_runstate_info& a, const vcpu_runstate_info& b)
{
    for (unsigned i = 0; i < 4; ++i)
        if (b.time[i] < a.time[i]) return false;
    return b.state_entry_time >= a.state_entry_time;
}

void runstate()
{
    vcpu_runstate_info a{}, b{};
    check("VCPUOP_get_runstate_info of vCPU 0", runstate_info(0, &a), 0);
    checkx("  running", uint64_t(a.state), RUNSTATE_running);
    check("  no update flag", (a.state_entry_time & XEN_RUNSTATE_UPDATE) == 0, 1);
    check("  running since before now: time[running] > 0", a.time[RUNSTATE_running] > 0, 1);
    check("VCPUOP_get_runstate_info again", runstate_info(0, &b), 0);
    check("  no total and no entry time went back", not_before(a, b), 1);
    check("  time[running] grew", b.time[RUNSTATE_running] > a.time[RUNSTATE_running], 1);
    check("VCPUOP_get_runstate_info into an unmapped page: -EFAULT",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_get_runstate_info, 0, XENPV_VIRT_BASE + (1ull << 38)), -XEN_EFAULT);
    check("VCPUOP_get_runstate_info of vCPU 99: -ENOENT", runstate_info(99, &a), -XEN_ENOENT);
    check("VCPUOP_register_runstate_memory_area in the hypervisor's range: -EFAULT",
          runstate_area(0, 0xffff800000000000), -XEN_EFAULT);
    check("VCPUOP_register_runstate_memory_area at a non-canonical address: -EFAULT",
          runstate_area(0, kNonCanonical), -XEN_EFAULT);
    // Xen checks the first byte only; the write fails, nothing is written.
    check("VCPUOP_register_runstate_memory_area across the lower half's end: 0",
          runstate_area(0, 0x00007fffffffffe0), 0);
    check("VCPUOP_register_runstate_memory_area not mapped: 0 (nothing written)",
          runstate_area(0, XENPV_VIRT_BASE + (1ull << 38)), 0);
    g_rs0.state = -1;
    check("VCPUOP_register_runstate_memory_area of vCPU 0", runstate_area(0, uint64_t(&g_rs0)), 0);
    checkx("  written at once: running", uint64_t(g_rs0.state), RUNSTATE_running);
    check("  no update flag", (g_rs0.state_entry_time & XEN_RUNSTATE_UPDATE) == 0, 1);
    check("VCPUOP_get_runstate_info", runstate_info(0, &b), 0);
    check("  no earlier than the area", not_before(g_rs0, b), 1);
    check("VCPUOP_register_runstate_memory_area of vCPU 0: none (0)", runstate_area(0, 0), 0);
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0) return;
    check("VCPUOP_get_runstate_info of vCPU 1, down", runstate_info(1, &a), 0);
    checkx("  offline", uint64_t(a.state), RUNSTATE_offline);
    check("vm_assist enable runstate_update_flag",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, VMASST_TYPE_runstate_update_flag), 0);
    g_rs1.state = -1;
    check("VCPUOP_register_runstate_memory_area of vCPU 1", runstate_area(1, uint64_t(&g_rs1)), 0);
    checkx("  written at once: offline", uint64_t(g_rs1.state), RUNSTATE_offline);
    check("  no update flag", (g_rs1.state_entry_time & XEN_RUNSTATE_UPDATE) == 0, 1);
    check("  no earlier than the info before", not_before(a, g_rs1), 1);
}

// After vCPU 1 ran and went down (vcpu_context): its area says offline
// again, entered after the area's first writing, with running time.
void runstate_after_vcpu1(const vcpu_runstate_info& before)
{
    checkx("vCPU 1 saw its area say running", uint64_t(conform_vcpu1_rs_state), RUNSTATE_running);
    checkx("  its area after VCPUOP_down: offline", uint64_t(g_rs1.state), RUNSTATE_offline);
    check("  no update flag", (g_rs1.state_entry_time & XEN_RUNSTATE_UPDATE) == 0, 1);
    check("  entered offline after the first writing", g_rs1.state_entry_time > before.state_entry_time, 1);
    check("  time[running] grew", g_rs1.time[RUNSTATE_running] > before.time[RUNSTATE_running], 1);
    check("  no total went back", not_before(before, g_rs1), 1);
    vcpu_runstate_info r{};
    check("VCPUOP_get_runstate_info of vCPU 1", runstate_info(1, &r), 0);
    check("  no earlier than its area", not_before(g_rs1, r), 1);
    check("vm_assist disable runstate_update_flag",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_disable, VMASST_TYPE_runstate_update_flag), 0);
}

void vcpu_context(const start_info_t* si, uint64_t free)
{
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0) {
        write("conform guest: no vCPU 1 down: the VCPUOP_initialise checks are not run\n");
        return;
    }
    static vcpu_guest_context_t ctx;
    ctx.flags = VGCF_in_kernel;
    ctx.user_regs.rip = uint64_t(conform_vcpu1_start);
    ctx.user_regs.rsp = uint64_t(g_vcpu1_stack + sizeof(g_vcpu1_stack) - 8);
    ctx.user_regs.cs = FLAT_KERNEL_CS64;
    ctx.user_regs.ss = FLAT_KERNEL_SS;
    ctx.kernel_ss = FLAT_KERNEL_SS;
    ctx.kernel_sp = ctx.user_regs.rsp;
    ctx.ctrlreg[3] = xen_pfn_to_cr3(p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12]);
    auto initialise = [&] { return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)); };
    ctx.trap_ctxt[6] = trap_info_t{6, 0, FLAT_KERNEL_CS64, kNonCanonical};
    check("VCPUOP_initialise with a non-canonical trap handler: -EINVAL", initialise(), -XEN_EINVAL);
    ctx.trap_ctxt[6] = trap_info_t{};
    ctx.event_callback_eip = kNonCanonical;
    check("VCPUOP_initialise with a non-canonical event callback: -EINVAL", initialise(), -XEN_EINVAL);
    ctx.event_callback_eip = 0;
    ctx.kernel_sp = kNonCanonical;
    check("VCPUOP_initialise with a non-canonical kernel_sp: -EINVAL", initialise(), -XEN_EINVAL);
    ctx.kernel_sp = uint64_t(g_vcpu1_kstack + sizeof(g_vcpu1_kstack));
    ctx.flags = 0;
    check("VCPUOP_initialise in user mode (no VGCF_in_kernel) without ctrlreg[1]: -EINVAL", initialise(),
          -XEN_EINVAL);
    ctx.flags = VGCF_in_kernel;
    ctx.ctrlreg[1] = xen_pfn_to_cr3(p2m(si)[(uint64_t(g_vcpu1_stack) - XENPV_VIRT_BASE) >> 12]);
    check("VCPUOP_initialise with a ctrlreg[1] mapped writable (no L4): -EINVAL", initialise(), -XEN_EINVAL);
    check("  vCPU 1 still down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);
    check("  VCPUOP_up of it: -EINVAL", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), -XEN_EINVAL);
    const uint64_t user_l4 = user_mode_l4(si, free);
    if (!user_l4) return;
    ctx.ctrlreg[1] = xen_pfn_to_cr3(user_l4);
    ctx.trap_ctxt[3] = trap_info_t{3, 3, FLAT_KERNEL_CS64, uint64_t(conform_vcpu1_bp)};
    ctx.trap_ctxt[6] = trap_info_t{6, 0, FLAT_KERNEL_CS64, uint64_t(um_ud_entry)};
    ctx.trap_ctxt[13] = trap_info_t{13, 0, FLAT_KERNEL_CS64, uint64_t(conform_vcpu1_gp)};
    ctx.user_regs.rflags = 0x1000;   // IOPL 1: Xen takes it as the vCPU's virtual IOPL
    check("VCPUOP_initialise of vCPU 1 with a #BP handler in trap_ctxt, IOPL 1, a user L4 in ctrlreg[1]",
          initialise(), 0);
    const vcpu_runstate_info before = g_rs1;
    check("VCPUOP_up of vCPU 1", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
    uint64_t spins = 0;
    while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0 && ++spins < 100000000)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("  vCPU 1's INT3 reached the context's #BP handler, then it went down", long(conform_vcpu1_vector), 3);
    check("  vCPU 1's %cr0: AM set (its CPU's)", long(conform_vcpu1_cr0 & kCr0Am), long(kCr0Am));
    check("  its IN from port 0xcf8 at the context's IOPL 1: no #GP", long(conform_vcpu1_gp_seen), 0);
    vcpu1_user_checks(uint64_t(g_vcpu1_kstack + sizeof(g_vcpu1_kstack)));
    // Xen 4.17 gives a PV vCPU no APIC ID of its own (0), not its CPU's.
    check("xen cpuid 1 on vCPU 1: APIC ID (EBX 31:24) 0", long(conform_vcpu1_leaf1_ebx >> 24), 0);
    // Xen writes the area when vCPU 1's CPU next schedules (after is_up says
    // down): wait for it a while.
    for (spins = 0; g_rs1.state != RUNSTATE_offline && spins < 100000000; ++spins)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    runstate_after_vcpu1(before);
    if (g_pvmmu) vcpu1_user_start(ctx, uint64_t(g_vcpu1_kstack + sizeof(g_vcpu1_kstack)));
}

// VCPUOP_register_vcpu_info (<xen/vcpu.h>): Xen's checks (-ENXIO for an
// offset past the page; -EINVAL for a frame beyond memory or a page table, a
// second registration; -EFAULT for an unreadable argument); the vcpu_info moves to
// the frame (the time's scale with it), with everything marked pending; the
// virtual CR2 of a #PF is written there from then on, not in shared_info.
alignas(4096) uint8_t g_vcpu_info_page[4096];

long register_vcpu_info(unsigned vcpu, uint64_t mfn, uint32_t offset)
{
    vcpu_register_vcpu_info_t r{mfn, offset, 0};
    return hypercall(__HYPERVISOR_vcpu_op, VCPUOP_register_vcpu_info, vcpu, uint64_t(&r));
}

void vcpu_info_checks(const start_info_t* si, uint64_t shared_va)
{
    volatile shared_info_t* sh = reinterpret_cast<shared_info_t*>(shared_va);
    const uint64_t mfn = p2m(si)[(uint64_t(g_vcpu_info_page) - XENPV_VIRT_BASE) >> 12];
    const xen_pfn_t l4 = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    // Upcalls masked: Xen marks everything pending at registration, and this
    // guest has no event callback to take them.
    sh->vcpu_info[0].evtchn_upcall_mask = 1;
    sh->vcpu_info[1].evtchn_upcall_mask = 1;
    check("VCPUOP_register_vcpu_info past the page's end: -ENXIO",
          register_vcpu_info(0, mfn, 4096 - sizeof(vcpu_info_t) + 1), -XEN_ENXIO);
    check("VCPUOP_register_vcpu_info of a frame beyond memory: -EINVAL", register_vcpu_info(0, 1ull << 40, 0),
          -XEN_EINVAL);
    check("VCPUOP_register_vcpu_info of the L4 in use: -EINVAL", register_vcpu_info(0, l4, 0), -XEN_EINVAL);
    check("VCPUOP_register_vcpu_info with an unreadable argument: -EFAULT",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_register_vcpu_info, 0, XENPV_VIRT_BASE + (1ull << 38)), -XEN_EFAULT);
    const uint32_t mul = sh->vcpu_info[0].time.tsc_to_system_mul;
    const int8_t shift = sh->vcpu_info[0].time.tsc_shift;
    check("VCPUOP_register_vcpu_info of vCPU 0 at offset 128", register_vcpu_info(0, mfn, 128), 0);
    const volatile vcpu_info_t* vi = reinterpret_cast<const vcpu_info_t*>(g_vcpu_info_page + 128);
    check("  the time's scale moved there", vi->time.tsc_to_system_mul == mul && vi->time.tsc_shift == shift, 1);
    checkx("  evtchn_upcall_pending", vi->evtchn_upcall_pending, 1);
    checkx("  every evtchn_pending_sel bit", vi->evtchn_pending_sel, ~0ull);
    check("  again: -EINVAL", register_vcpu_info(0, mfn, 256), -XEN_EINVAL);
    const uint64_t old_cr2 = sh->vcpu_info[0].arch.cr2;
    constexpr uint64_t kFault = XENPV_VIRT_BASE + (1ull << 38) + 8;
    check("a #PF", trap_of(c_load, kFault), 14);
    checkx("  its CR2 in the registered vcpu_info", vi->arch.cr2, kFault);
    checkx("  not in shared_info's", sh->vcpu_info[0].arch.cr2, old_cr2);
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0) return;
    check("VCPUOP_register_vcpu_info of vCPU 1, down, at offset 256", register_vcpu_info(1, mfn, 256), 0);
    checkx("  evtchn_upcall_pending", reinterpret_cast<const volatile vcpu_info_t*>(g_vcpu_info_page + 256)->evtchn_upcall_pending, 1);
}

} // namespace

// vCPU 1's #BP handler: records the vector and goes down (no iret).
extern "C" [[noreturn]] void conform_vcpu1_trap()
{
    // Its forced-emulation CPUID leaf 1 EBX (the APIC ID in 31:24): emulated
    // on both, so called without conform_call's recovery.
    uint32_t r[4] = {};
    reinterpret_cast<void (*)(uint64_t, uint32_t*, uint64_t)>(c_xen_cpuid)(1, r, 0);
    conform_vcpu1_leaf1_ebx = r[1];
    conform_vcpu1_rs_state = g_rs1.state;
    uint64_t cr0 = 0;
    asm volatile("mov %%cr0, %0" : "=r"(cr0));   // emulated on both
    conform_vcpu1_cr0 = cr0;
    vcpu1_user_mode();
    conform_vcpu1_vector = 3;
    hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 1, 0);
    for (;;) {
    }
}

// Xen's "writable page tables" (docs/abi.md §12.5): the guest kernel writes
// an entry of one of its own L1 tables, in use, through the table's
// read-only mapping, with ordinary instructions; the hypervisor emulates
// each as mmu_update would take the entry. The entry is the one that maps
// g_ptwr_page (its frame "pm"); the frame mapped in its place is
// g_ptwr_data's ("dm"). After each change the TLB entry is flushed
// (MMUEXT_INVLPG_LOCAL), as the guest must after mmu_update too.
alignas(4096) volatile uint64_t g_ptwr_page[512];
alignas(4096) volatile uint64_t g_ptwr_data[512];

void invlpg(uint64_t va)
{
    mmuext_op_t op{};
    op.cmd = MMUEXT_INVLPG_LOCAL;
    op.arg1.linear_addr = va;
    hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

// What a refused write must look like: the #PF as the CPU raised it
// (present, write; U/S clear for the kernel), CR2 the entry, nothing changed.
void refused(const char* what, uint64_t at, uint64_t val, uint64_t pte_va, uint64_t was)
{
    check(what, trap_of(c_st64, at, val), 14);
    check("  error code: present, write, kernel mode", long(conform_w[0] & 0x1f), 3);
    uint64_t cr2 = 0;
    trap_of(c_rd_cr2, 0, 0, &cr2);
    checkx("  %cr2: the address written", cr2, at);
    checkx("  the entry unchanged", *reinterpret_cast<volatile uint64_t*>(pte_va), was);
}

long mmuext1(unsigned cmd, uint64_t mfn)
{
    mmuext_op_t op{};
    op.cmd = cmd;
    op.arg1.mfn = mfn;
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

// Linux's first switch of L4 (its xen_setup_kernel_pagetable): a copy of the boot L4 pinned and made the
// base pointer, the boot L4 unpinned, then mapped writable. Only vCPU 0
// starts on the boot L4 (Xen's builder gives the others no page tables
// until VCPUOP_initialise), so nothing holds it any more and the writable
// mapping is taken, with vCPU 1 never initialised. Then back as it was.
// The copy is frame free + 12 (user_mode.cc uses up to free + 11).
void boot_l4_switch(const start_info_t* si, uint64_t free)
{
    const uint64_t boot = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    const uint64_t copy_g = free + 12, copy = p2m(si)[copy_g];
    const uint64_t copy_va = uint64_t(gpfn_bytes(copy_g));
    const uint64_t* src = reinterpret_cast<const uint64_t*>(si->pt_base);
    // Slots 256-271 are the hypervisor's: it fills them in its own L4s.
    for (unsigned i = 0; i < 512; ++i) gpfn_bytes(copy_g)[i] = i >= 256 && i < 272 ? 0 : src[i];
    const auto map = [](uint64_t va, uint64_t mfn, uint64_t flags) {
        return hypercall(__HYPERVISOR_update_va_mapping, va, (mfn << 12) | flags, UVMF_INVLPG | UVMF_LOCAL);
    };
    check("vCPU 1 never initialised: down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) > 0, 0);
    check("boot L4 switch: a copy mapped read-only", map(copy_va, copy, 0x65), 0);
    check("  MMUEXT_PIN_L4_TABLE of the copy", mmuext1(MMUEXT_PIN_L4_TABLE, copy), 0);
    check("  MMUEXT_NEW_BASEPTR: the copy", mmuext1(MMUEXT_NEW_BASEPTR, copy), 0);
    check("  MMUEXT_UNPIN_TABLE of the boot L4", mmuext1(MMUEXT_UNPIN_TABLE, boot), 0);
    check("  the boot L4 mapped writable", map(si->pt_base, boot, 0x67), 0);
    check("  and read-only again", map(si->pt_base, boot, 0x65), 0);
    check("  MMUEXT_PIN_L4_TABLE of the boot L4", mmuext1(MMUEXT_PIN_L4_TABLE, boot), 0);
    check("  MMUEXT_NEW_BASEPTR: the boot L4", mmuext1(MMUEXT_NEW_BASEPTR, boot), 0);
    check("  MMUEXT_UNPIN_TABLE of the copy", mmuext1(MMUEXT_UNPIN_TABLE, copy), 0);
    check("  the copy writable again", map(copy_va, copy, 0x67), 0);
}

// An L1 the guest pinned itself, linked nowhere (as Linux pins its L1s
// before it links them): a RIP-relative MOV into it through its read-only
// mapping is taken; once unpinned the frame is no page table and the same
// store is the CPU's #PF.
void pinned_l1(const start_info_t* si, uint64_t dm)
{
    const uint64_t va = uint64_t(g_pin_l1);
    const uint64_t m = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    check("the page to pin mapped read-only",
          hypercall(__HYPERVISOR_update_va_mapping, va, (m << 12) | 0x65, UVMF_INVLPG | UVMF_LOCAL), 0);
    check("MMUEXT_PIN_L1_TABLE of it", mmuext1(MMUEXT_PIN_L1_TABLE, m), 0);
    check("a RIP-relative mov into its entry 2", trap_of(c_st_pinned, (dm << 12) | 0x5), kNoTrap);
    checkx("  the entry maps the frame read-only", g_pin_l1[2] & 0x000ffffffffff003ull, (dm << 12) | 1);
    check("a RIP-relative mov of a writable mapping of the table itself: #PF", trap_of(c_st_pinned, (m << 12) | 0x7), 14);
    checkx("  the entry unchanged", g_pin_l1[2] & 0x000ffffffffff003ull, (dm << 12) | 1);
    check("a RIP-relative mov of 0", trap_of(c_st_pinned, 0), kNoTrap);
    checkx("  the entry", g_pin_l1[2], 0);
    check("MMUEXT_UNPIN_TABLE", mmuext1(MMUEXT_UNPIN_TABLE, m), 0);
    check("the same mov, no longer into a page table: #PF", trap_of(c_st_pinned, (dm << 12) | 0x5), 14);
    check("the page writable again",
          hypercall(__HYPERVISOR_update_va_mapping, va, (m << 12) | 0x67, UVMF_INVLPG | UVMF_LOCAL), 0);
}

// c_edge_st64 (c_st64's MOV) at offset 0xff1 of a page of its own, its 15
// bytes to the page's end, and c_edge_next the page after it, which
// ptwr_at_page_end unmaps: a fetch of 16 bytes there faults.
asm(R"(
    .pushsection .text.ptwr_edge, "ax", @progbits
    .balign 4096
    .skip 0xff1, 0xcc
    .globl c_edge_st64, c_edge_next
    .hidden c_edge_st64, c_edge_next
c_edge_st64:
    mov %rsi, (%rdi); xor %eax, %eax; ret
    .balign 4096, 0xcc
c_edge_next:
    .skip 4096, 0xcc
    .popsection
)");
extern "C" HIDDEN char c_edge_st64[], c_edge_next[];

// A write to the L1 entry at pte_va by an instruction 15 bytes before the
// end of its page, the next page unmapped: emulated as any other, from the
// bytes up to the page's end.
void ptwr_at_page_end(const start_info_t* si, uint64_t pte_va, uint64_t val)
{
    const uint64_t next = uint64_t(c_edge_next);
    const uint64_t e = l1_entry_of(si, next);
    volatile uint64_t* const next_pte =
        reinterpret_cast<volatile uint64_t*>(uint64_t(gpfn_bytes(gpfn_of(si, e >> 12))) + (e & 4095));
    const uint64_t saved = *next_pte;
    checkx("the write at page offset 0xff1", uint64_t(c_edge_st64) & 4095, 0xff1);
    check("  the page after it unmapped", hypercall(__HYPERVISOR_update_va_mapping, next, 0, UVMF_INVLPG | UVMF_LOCAL), 0);
    check("  a read of it: #PF", trap_of(c_load, next), 14);
    check("  the mov into the entry, emulated", trap_of(c_edge_st64, pte_va, val), kNoTrap);
    constexpr uint64_t kFrameAndPerms = 0x000ffffffffff003ull;   // Xen adds G to a user mapping
    checkx("  the entry", *reinterpret_cast<volatile uint64_t*>(pte_va) & kFrameAndPerms, val & kFrameAndPerms);
    check("  the page after it mapped again",
          hypercall(__HYPERVISOR_update_va_mapping, next, saved, UVMF_INVLPG | UVMF_LOCAL), 0);
}

void pt_writes(const start_info_t* si, bool pvmmu)
{
    // Xen 4.17 emulates these writes for a PV guest but does not report
    // XENFEAT_writable_page_tables to it (checked here on Xen: submap 0x228e0).
    xen_feature_info_t fi{0, 0};
    check("xen_version(XENVER_get_features, 0)", hypercall(__HYPERVISOR_xen_version, XENVER_get_features, uint64_t(&fi)), 0);
    write("  submap 0: ");
    write_hex(fi.submap);
    write("\n");
    checkx("  XENFEAT_writable_page_tables not reported to a PV guest", fi.submap & (1u << XENFEAT_writable_page_tables), 0);
    // What both report to a PV guest (Xen 4.17's common/kernel.c; docs/abi.md
    // §8): Linux 6.1 panics without gnttab_map_avail_bits.
    checkx("  XENFEAT_gnttab_map_avail_bits reported", fi.submap & (1u << XENFEAT_gnttab_map_avail_bits),
           1u << XENFEAT_gnttab_map_avail_bits);
    checkx("  XENFEAT_direct_mapped reported", fi.submap & (1u << XENFEAT_direct_mapped), 1u << XENFEAT_direct_mapped);
    checkx("  XENFEAT_auto_translated_physmap not reported", fi.submap & (1u << XENFEAT_auto_translated_physmap), 0);
    fi = {1, 0x1234};
    check("xen_version(XENVER_get_features, 1): -EINVAL (one submap)",
          hypercall(__HYPERVISOR_xen_version, XENVER_get_features, uint64_t(&fi)), -XEN_EINVAL);

    constexpr uint64_t kP = 1, kRw = 2, kUs = 4, kA = 0x20, kNx = 1ull << 63;
    constexpr uint64_t kFrameAndPerms = 0x000ffffffffff000ull | kP | kRw;
    const uint64_t va = uint64_t(g_ptwr_page);
    g_ptwr_page[0] = 0x1111;
    g_ptwr_data[0] = 0x5a5a;
    const uint64_t pm = p2m(si)[(va - XENPV_VIRT_BASE) >> 12];
    const uint64_t dm = p2m(si)[(uint64_t(g_ptwr_data) - XENPV_VIRT_BASE) >> 12];
    const uint64_t entry = l1_entry_of(si, va);
    const uint64_t l1 = entry >> 12;
    const uint64_t pte_va = uint64_t(gpfn_bytes(gpfn_of(si, l1))) + (entry & 4095);
    volatile uint64_t* const pte = reinterpret_cast<volatile uint64_t*>(pte_va);
    const uint64_t orig = *pte;
    checkx("the entry maps the page's frame writable", orig & kFrameAndPerms, (pm << 12) | kP | kRw);

    // MOV r64: another frame mapped, read through.
    check("mov of an entry mapping another frame", trap_of(c_st64, pte_va, (dm << 12) | kP | kRw | kUs), kNoTrap);
    checkx("  the entry", *pte & kFrameAndPerms, (dm << 12) | kP | kRw);
    invlpg(va);
    checkx("  the page reads the new frame", g_ptwr_page[0], 0x5a5a);

    // Byte and word writes, merged into the entry (Xen takes any naturally
    // aligned 1, 2, 4 or 8 bytes): Linux's write-protect is lock andb $0xfd.
    const uint64_t mapped = *pte & (kFrameAndPerms | kNx);
    check("lock andb $0xfd: RW off", trap_of(c_andb_rw, pte_va), kNoTrap);
    checkx("  the entry: read-only, the rest kept", *pte & (kFrameAndPerms | kNx), mapped & ~kRw);
    invlpg(va);
    check("  a store to the page: #PF", trap_of(c_store, va + 8, 1), 14);
    check("lock orw of RW: writable again", trap_of(c_orw, pte_va, kRw), kNoTrap);
    checkx("  the entry", *pte & (kFrameAndPerms | kNx), mapped);
    invlpg(va);
    check("  a store to the page", trap_of(c_store, va + 8, 1), kNoTrap);
    check("ds andb $0xfd (Linux's LOCK patched for one CPU): RW off", trap_of(c_ds_andb_rw, pte_va), kNoTrap);
    checkx("  the entry: read-only, the rest kept", *pte & (kFrameAndPerms | kNx), mapped & ~kRw);
    check("  lock orw of RW: writable again", trap_of(c_orw, pte_va, kRw), kNoTrap);
    invlpg(va);
    check("movb $0x80 to byte 7: NX on", trap_of(c_movb, pte_va + 7, 0x80), kNoTrap);
    checkx("  the entry: NX, the rest kept", *pte & (kFrameAndPerms | kNx), mapped | kNx);
    check("movb $0 to byte 7: NX off", trap_of(c_movb, pte_va + 7, 0), kNoTrap);
    checkx("  the entry as before", *pte & (kFrameAndPerms | kNx), mapped);
    // Linux's write-protect form at the entry's top byte (a disp8), its
    // flags those of the byte's AND: 0x80 & 0x7f, zero.
    check("movb $0x80 to byte 7: NX on again", trap_of(c_movb, pte_va + 7, 0x80), kNoTrap);
    conform_zf = 7;
    check("lock andb $0x7f to byte 7 (a disp8): NX off", trap_of(c_andb_nx_off, pte_va), kNoTrap);
    checkx("  ZF set, SF clear", conform_zf, 1);
    checkx("  the entry as before", *pte & (kFrameAndPerms | kNx), mapped);
    invlpg(va);

    // XCHG: cleared, the old value with the A bit the read above set.
    uint64_t old = 0;
    check("xchg of 0 into the entry", trap_of(c_xchg, pte_va, 0, &old), kNoTrap);
    checkx("  the old value: the frame", old & kFrameAndPerms, (dm << 12) | kP | kRw);
    checkx("  with Accessed, set by the read", old & kA, kA);
    checkx("  the entry now 0", *pte, 0);
    invlpg(va);
    check("  the page unmapped: #PF", trap_of(c_load, va), 14);

    // LOCK CMPXCHG: a match writes, ZF and RAX as the CPU's; a mismatch
    // writes nothing and gives the entry in RAX.
    check("lock cmpxchg 0 -> the frame", trap_of(c_cmpxchg, pte_va, 0, &old, (dm << 12) | kP | kRw | kUs), kNoTrap);
    check("  ZF set, RAX the expected value", conform_zf == 1 && old == 0, 1);
    checkx("  the entry", *pte & kFrameAndPerms, (dm << 12) | kP | kRw);
    const uint64_t now = *pte;
    check("lock cmpxchg from a wrong value", trap_of(c_cmpxchg, pte_va, 0x1234007, &old, (pm << 12) | 7), kNoTrap);
    check("  ZF clear, RAX the entry", conform_zf == 0 && old == now, 1);
    checkx("  the entry unchanged", *pte, now);

    // LOCK BTR $5: the Accessed bit hardware set, cleared, CF the old bit.
    invlpg(va);
    checkx("read through the page", g_ptwr_page[0], 0x5a5a);
    check("lock btr of Accessed: CF 1", trap_of(c_btr_a, pte_va, 0, &old) == kNoTrap && old == 1, 1);
    checkx("  Accessed clear, the rest kept", *pte, now & ~kA);
    check("  again: CF 0", trap_of(c_btr_a, pte_va, 0, &old) == kNoTrap && old == 0, 1);

    // LOCK OR r64 and LOCK AND imm8 (sign-extended): NX on, then P off.
    check("lock or of NX", trap_of(c_or, pte_va, kNx), kNoTrap);
    checkx("  NX set", *pte & kNx, kNx);
    check("lock and $-2: not present", trap_of(c_and_imm8, pte_va), kNoTrap);
    checkx("  P clear", *pte & kP, 0);
    invlpg(va);
    check("  the page unmapped: #PF", trap_of(c_load, va), 14);

    // MOV r32 of the entry's low half (Xen merges it into the entry).
    check("movl of the low half: the frame read-only", trap_of(c_store, pte_va, uint32_t((dm << 12) | kP | kUs)),
          kNoTrap);
    checkx("  the entry: the frame, read-only, NX kept", *pte & (kFrameAndPerms | kNx), (dm << 12) | kP | kNx);
    invlpg(va);
    checkx("  the page reads it", g_ptwr_page[0], 0x5a5a);
    check("  a store to it: #PF", trap_of(c_store, va, 1), 14);

    // Refused, nothing changed, the #PF the CPU raised delivered: a
    // writable mapping of a page table, a misaligned write.
    const uint64_t before = *pte;
    refused("mov of a writable mapping of the L1 itself: #PF", pte_va, (l1 << 12) | kP | kRw | kUs, pte_va, before);
    refused("mov of a writable mapping of the L4 in use: #PF", pte_va,
            (p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12] << 12) | kP | kRw | kUs, pte_va, before);
    refused("a misaligned mov (entry + 4): #PF", pte_va + 4, (dm << 12) | kP | kUs, pte_va, before);
    if (pvmmu) {   // Xen's dom0, which runs this there, may map frames of no domain
        pvmmu_facts f{};
        check("pvmmu_op(PVMMUOP_facts)", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&f)), 0);
        refused("mov of a mapping of a frame not ours: #PF on pvmmu", pte_va, (f.hypervisor_mfn << 12) | kP | kUs,
                pte_va, before);
    }

    pinned_l1(si, dm);
    ptwr_at_page_end(si, pte_va, (dm << 12) | kP | kUs);

    // Back as it was: the page's own frame, writable.
    check("mov of the original entry", trap_of(c_st64, pte_va, orig), kNoTrap);
    invlpg(va);
    checkx("  the page reads its own frame", g_ptwr_page[0], 0x1111);
    g_ptwr_page[1] = 2;
    checkx("  and takes a store", g_ptwr_page[1], 2);
}

// Writable page tables without VMASST_TYPE_writable_pagetables: before the
// guest enables it and after it disables it, a MOV into an L1 entry is still
// emulated, on Xen 4.17 as on pvmmu (docs/abi.md §12.5: always on).
void ptwr_without_assist(const start_info_t* si, const char* what)
{
    constexpr uint64_t kNx = 1ull << 63;
    const uint64_t va = uint64_t(g_ptwr_page);
    const uint64_t entry = l1_entry_of(si, va);
    const uint64_t pte_va = uint64_t(gpfn_bytes(gpfn_of(si, entry >> 12))) + (entry & 4095);
    volatile uint64_t* const pte = reinterpret_cast<volatile uint64_t*>(pte_va);
    const uint64_t v = *pte;
    check(what, trap_of(c_st64, pte_va, v ^ kNx), kNoTrap);
    checkx("  NX flipped", (*pte ^ v) & kNx, kNx);
    check("  and back", trap_of(c_st64, pte_va, v), kNoTrap);
    checkx("  NX as it was", (*pte ^ v) & kNx, 0);
    invlpg(va);
}

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    const bool pvmmu = g_pvmmu = on_pvmmu();
    write(pvmmu ? "conform guest: on pvmmu\n" : "conform guest: on Xen\n");
    traps();
    emulation(si, pvmmu);
    const uint64_t free = (initial_sp - XENPV_VIRT_BASE + 4095) >> 12;
    hypercall_msr(si, free);
    segment_bases(pvmmu);
    debug_registers();
    watched_bounce_frame();
    port_io(pvmmu);
    write_cr3(si, free);
    boot_l4_switch(si, free);
    ptwr_without_assist(si, "mov into an L1 entry before vm_assist enables writable_pagetables");
    hypercalls(pvmmu);
    sched_checks(pvmmu);
    update_descriptor_checks(si, pvmmu);
    ldt_checks(si, pvmmu);
    multicalls(si);
    pt_writes(si, pvmmu);
    check("vm_assist disable writable_pagetables",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_disable, VMASST_TYPE_writable_pagetables), 0);
    ptwr_without_assist(si, "mov into an L1 entry with writable_pagetables disabled");
    compat_mode(si, free);
    runstate();
    m2p(si, pvmmu);
    memory_queries(si, pvmmu, ((initial_sp + 4095) & ~4095ull) + 4096);
    vcpu_context(si, free);
    vcpu_info_checks(si, ((initial_sp + 4095) & ~4095ull) + 4096);
    event_checks(reinterpret_cast<volatile shared_info_t*>(((initial_sp + 4095) & ~4095ull) + 4096),
                 reinterpret_cast<volatile vcpu_info_t*>(g_vcpu_info_page + 128));
    user_mode_checks(si, free, reinterpret_cast<volatile shared_info_t*>(((initial_sp + 4095) & ~4095ull) + 4096),
                     reinterpret_cast<volatile vcpu_info_t*>(g_vcpu_info_page + 128));
    fifo_checks(si, reinterpret_cast<volatile vcpu_info_t*>(g_vcpu_info_page + 128));
    finish("conform guest");
}
