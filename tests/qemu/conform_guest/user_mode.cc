// Guest user mode, as x86-64 PV defines it (<xen/arch-x86/xen-x86_64.h>,
// <xen/callback.h>; docs/abi.md §10 "Guest user mode"), run on pvmmu
// (qemu_guest_conform) and on Xen 4.17 as dom0 (xen_conform_guest) with the
// same answers:
// - MMUEXT_NEW_USER_BASEPTR of a user L4 that maps a code page, a data page
//   and a %gs page, and not the kernel; the iret hypercall to a CS with RPL
//   3 enters user mode on it (a user page reads there; the kernel's does not,
//   and the user's is not mapped in the kernel's L4).
// - SYSCALL from user mode: the syscall callback, not a hypercall (RAX as
//   the user left it), with Xen's frame (RCX, R11, RIP, CS, RFLAGS, RSP, SS)
//   on the kernel stack stack_switch named.
// - A #PF in user mode: on the kernel stack, the error code's U/S bit set,
//   CR2 the address, CS with RPL 3.
// - The user %gs base (SEGBASE_GS_USER) live in user mode, the kernel's back
//   after the entry.
// - INT $0x80 through trap-table entry 0x80 of DPL 3; a privileged
//   instruction in user mode is #GP(0), not emulated.
// - iret's VGCF_in_syscall (RCX and R11 as SYSRET leaves them) and an SS of
//   RPL 0 taken with RPL 3.
// - An event pending when an iret to user mode unmasks upcalls: the event
//   callback at once, on the kernel stack, with the user's RIP and CS.
// - EFLAGS.AC set in user mode: the entry's handler runs with AC clear
//   (Xen's create_bounce_frame clears it), the frame keeping the user's AC.
//   (Both run guests with CR0.AM set, main.cc's emulation checks, so on
//   hardware a misaligned access with AC set is #AC; QEMU's TCG, which runs
//   these tests, raises no #AC at all, so that is not checked here.)
// - vCPU 1 (main.cc vcpu_context), started with ctrlreg[1] as its user L4
//   and no syscall callback: its iret to user mode runs there, and its
//   SYSCALL is a #UD at the SYSCALL, on its kernel stack (vcpu1_user_mode).
//   On pvmmu, which initialises a vCPU again once it went down (Xen never
//   does: -EEXIST), vCPU 1 then starts in user mode (flags without
//   VGCF_in_kernel) on that L4 (vcpu1_user_start).
#include "tiny_guest.h"

#include <xen/callback.h>
#include <xen/event_channel.h>

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))

// main.cc's recovery for kernel-mode traps (conform_call, conform_stubs).
extern "C" HIDDEN uint64_t conform_call(const void* fn, uint64_t a0, uint64_t a1, uint64_t a2);
extern "C" HIDDEN char conform_stubs[], c_load[], c_rd_cr2[], c_rd_gs[], c_rdmsr[];
extern "C" HIDDEN uint64_t conform_vector;

// um_call(rip, rsp, rdi, flags): the iret hypercall to user mode at rip on
// stack rsp (FLAT_RING3_CS64, SS um_ss, RFLAGS um_rflags: IF set unless
// changed, iret_context.flags `flags`),
// with RDI as given, RCX 0x5151 and R11 0x3b3b in the frame. Returns, on the
// kernel's stack, when an entry from user mode reaches one of um_entries:
// the entry's tag (0x91 the syscall callback, 0x92 the event callback, else
// the vector), with the
// 8 words at the entry's RSP in um_frame, that RSP in um_sp, RAX and RDI
// as the entry found them in um_rax and um_rdi, and the RFLAGS the entry
// ran with in um_hflags.
extern "C" HIDDEN uint64_t um_call(uint64_t rip, uint64_t rsp, uint64_t rdi, uint64_t flags);
extern "C" HIDDEN char um_syscall_entry[], um_event_entry[], um_ud_entry[], um_gp_entry[], um_pf_entry[],
    um_int80_entry[];
extern "C" HIDDEN uint64_t um_frame[8], um_sp, um_rax, um_rdi, um_hflags, um_ss, um_rflags;
extern "C" HIDDEN char u_page[], u_syscall[], u_syscall_ret[], u_load[], u_gs[], u_int80[], u_cr0[], u_regs[],
    u_ac_syscall[], u_nocb[], u_nocb_syscall[];
extern "C" HIDDEN uint8_t um_kstack[4096];
extern "C" HIDDEN char vcpu1_ud_entry[];
extern "C" HIDDEN volatile uint64_t vcpu1_ud_frame[8];
uint64_t um_ss = 0xe02b, um_rflags = 0x202;

asm(R"(
    .pushsection .text
    .globl um_call, um_syscall_entry, um_event_entry, um_ud_entry, um_gp_entry, um_pf_entry, um_int80_entry
    .hidden um_call, um_syscall_entry, um_event_entry, um_ud_entry, um_gp_entry, um_pf_entry, um_int80_entry
um_call:
    push %rbx; push %rbp; push %r12; push %r13; push %r14; push %r15
    mov %rsp, um_ksp(%rip)
    mov %rcx, %r8
    pushq um_ss(%rip)               /* ss */
    pushq %rsi                      /* rsp */
    pushq um_rflags(%rip)           /* rflags */
    pushq $0xe033                   /* cs: FLAT_RING3_CS64, RPL 3: user mode */
    pushq %rdi                      /* rip */
    pushq %r8                       /* flags */
    mov %rdx, %rdi
    mov $0x5151, %ecx               /* the stub pushes RCX, R11, RAX */
    mov $0x3b3b, %r11d
    jmp hypercall_page + 23 * 32
.macro UM_ENTRY name, tag
\name:
    mov %rax, um_rax(%rip)
    mov $\tag, %eax
    jmp um_common
.endm
    UM_ENTRY um_syscall_entry, 0x91
    UM_ENTRY um_event_entry, 0x92
    UM_ENTRY um_ud_entry, 6
    UM_ENTRY um_gp_entry, 13
    UM_ENTRY um_pf_entry, 14
    UM_ENTRY um_int80_entry, 0x80
um_common:
    pushfq
    popq um_hflags(%rip)
    mov %rdi, um_rdi(%rip)
    mov %rsp, um_sp(%rip)
    .set i, 0
    .rept 8
    mov i(%rsp), %rdx
    mov %rdx, um_frame+i(%rip)
    .set i, i + 8
    .endr
    mov um_ksp(%rip), %rsp
    pop %r15; pop %r14; pop %r13; pop %r12; pop %rbp; pop %rbx
    ret
    .popsection

    .pushsection .bss
    .balign 8
    .globl um_frame, um_sp, um_rax, um_rdi, um_hflags
    .hidden um_frame, um_sp, um_rax, um_rdi, um_hflags
um_ksp: .quad 0
um_frame: .zero 64
um_sp: .quad 0
um_rax: .quad 0
um_rdi: .quad 0
um_hflags: .quad 0
    .balign 4096
    .globl um_kstack
    .hidden um_kstack
um_kstack: .zero 4096
    .popsection

/* vCPU 1's #UD handler for vcpu1_user_start: the frame's 7 words and its
 * RSP into vcpu1_ud_frame, then VCPUOP_down (vcpu_op 24, VCPUOP_down 2). */
    .pushsection .text
    .globl vcpu1_ud_entry
    .hidden vcpu1_ud_entry
vcpu1_ud_entry:
    .set i, 0
    .rept 7
    mov i(%rsp), %rax
    mov %rax, vcpu1_ud_frame+i(%rip)
    .set i, i + 8
    .endr
    mov %rsp, vcpu1_ud_frame+56(%rip)
    mov $2, %edi
    mov $1, %esi
    xor %edx, %edx
    call hypercall_page + 24 * 32
    ud2
    .popsection
    .pushsection .bss
    .balign 8
    .globl vcpu1_ud_frame
    .hidden vcpu1_ud_frame
vcpu1_ud_frame: .zero 64
    .popsection

/* The user code: a page of its own, mapped in the user L4 at kUserCode. */
    .pushsection .text.user, "ax", @progbits
    .balign 4096
    .globl u_page, u_syscall, u_syscall_ret, u_load, u_gs, u_int80, u_cr0, u_regs
    .hidden u_page, u_syscall, u_syscall_ret, u_load, u_gs, u_int80, u_cr0, u_regs
    .globl u_ac_syscall, u_nocb, u_nocb_syscall
    .hidden u_ac_syscall, u_nocb, u_nocb_syscall
u_page:
u_syscall:
    mov $0x1234, %eax
    syscall
u_syscall_ret:
    ud2
u_load:                 /* RAX = *RDI, then SYSCALL */
    mov (%rdi), %rax
    syscall
    ud2
u_gs:                   /* RAX = %gs:0, then SYSCALL */
    mov %gs:0, %rax
    syscall
    ud2
u_int80:
    int $0x80
    ud2
u_cr0:
    mov %cr0, %rax
    ud2
u_regs:                 /* RCX and R11 as the iret left them, in RAX and RDI */
    mov %rcx, %rax
    mov %r11, %rdi
    syscall
    ud2
u_ac_syscall:           /* EFLAGS.AC on, then SYSCALL */
    pushfq
    orl $0x40000, (%rsp)
    popfq
    syscall
    ud2
u_nocb:                 /* DF on, then SYSCALL (vCPU 1: no syscall callback) */
    std
    mov $0x1234, %eax
u_nocb_syscall:
    syscall
    ud2
    .balign 4096
    .popsection
)");

namespace {

// The user address space: code at kUserCode, then a data page (its stack
// too) and a page for the user %gs base. L4, L3 and L2 slot 0, L2 slot 2.
constexpr uint64_t kUserCode = 0x400000, kUserData = kUserCode + 0x1000, kUserGs = kUserCode + 0x2000;
constexpr uint64_t kUserStack = kUserData + 0x1000 - 64;
constexpr uint64_t kDataMark = 0x7575, kUserGsMark = 0x6767, kKernelGsMark = 0x4b4b;
constexpr uint16_t kFlatCs64 = FLAT_RING3_CS64, kFlatSs = FLAT_RING3_SS64;
constexpr unsigned kSyscallTag = 0x91, kEventTag = 0x92;
constexpr uint64_t kMsrShadowGs = 0xc0000102;
constexpr uint64_t kAc = 0x40000, kDf = 0x400;   // EFLAGS.AC, EFLAGS.DF

uint64_t user_va(const char* p) { return kUserCode + uint64_t(p - u_page); }
uint64_t ktop() { return uint64_t(um_kstack) + sizeof(um_kstack); }

// A kernel variable, mapped only in the kernel's L4.
volatile uint64_t g_kernel_secret = 0x5ec7e7;
volatile uint64_t g_kernel_gs[1] = {kKernelGsMark};

long mmuext(unsigned cmd, uint64_t mfn)
{
    mmuext_op_t op{};
    op.cmd = cmd;
    op.arg1.mfn = mfn;
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

long set_traps(const trap_info_t* t) { return hypercall(__HYPERVISOR_set_trap_table, uint64_t(t)); }

// The user L4 from the frames free + 6 ... free + 11 (main.cc's checks use
// free ... free + 5): zeroed, filled, mapped read-only in the kernel, pinned
// as an L4 (Xen validates the whole tree), made the user base pointer. Its
// mfn, 0 if one of these steps failed. Once: user_mode_l4 keeps it.
uint64_t build_user_l4(const start_info_t* si, uint64_t free)
{
    const unsigned failed_before = g_failed;
    const uint64_t l4 = free + 6, l3 = free + 7, l2 = free + 8, l1 = free + 9, data = free + 10, gs = free + 11;
    const auto mfn = [&](uint64_t g) { return p2m(si)[g]; };
    for (uint64_t g = l4; g <= gs; ++g)
        for (unsigned i = 0; i < 512; ++i) gpfn_bytes(g)[i] = 0;
    gpfn_bytes(data)[0] = kDataMark;
    gpfn_bytes(gs)[0] = kUserGsMark;
    const uint64_t code = mfn((uint64_t(u_page) - XENPV_VIRT_BASE) >> 12);
    gpfn_bytes(l1)[0] = (code << 12) | 0x25;         // P, U, A: read-only
    gpfn_bytes(l1)[1] = (mfn(data) << 12) | 0x67;    // P, RW, U, A, D
    gpfn_bytes(l1)[2] = (mfn(gs) << 12) | 0x67;
    gpfn_bytes(l2)[2] = (mfn(l1) << 12) | 0x67;
    gpfn_bytes(l3)[0] = (mfn(l2) << 12) | 0x67;
    gpfn_bytes(l4)[0] = (mfn(l3) << 12) | 0x67;
    const uint64_t tables[] = {l4, l3, l2, l1};
    long rc = 0;
    for (uint64_t g : tables)
        rc |= hypercall(__HYPERVISOR_update_va_mapping, XENPV_VIRT_BASE + (g << 12), (mfn(g) << 12) | 0x65,
                        UVMF_INVLPG | UVMF_LOCAL);
    check("user L4: its tables mapped read-only", rc, 0);
    check("MMUEXT_PIN_L4_TABLE of the user L4", mmuext(MMUEXT_PIN_L4_TABLE, mfn(l4)), 0);
    check("MMUEXT_NEW_USER_BASEPTR", mmuext(MMUEXT_NEW_USER_BASEPTR, mfn(l4)), 0);
    return g_failed != failed_before ? 0 : mfn(l4);
}

uint64_t g_user_l4 = ~0ull;   // user_mode_l4's

void frame_checks(const char* what, uint64_t rip, unsigned words)
{
    check(what, um_frame[words - 5] == rip, 1);
    check("  CS: FLAT_RING3_CS64, RPL 3 (user context)", long(um_frame[words - 4] & 0xffff), kFlatCs64);
    check("  RFLAGS: IF (upcalls unmasked in user mode)", long(um_frame[words - 3] & 0x202), 0x202);
    check("  RSP: the user's", um_frame[words - 2] == kUserStack, 1);
    check("  SS: the user's, RPL 3", long(um_frame[words - 1] & 0xffff), kFlatSs);
    check("  on the kernel stack from stack_switch", um_sp == ((ktop() & ~15ull) - 8 * words), 1);
}

void syscall_checks()
{
    check("syscall from user mode: the syscall callback", long(um_call(user_va(u_syscall), kUserStack, 0, 0)),
          kSyscallTag);
    check("  RAX as the user left it (not a hypercall)", long(um_rax), 0x1234);
    check("  frame RCX: the RIP after the SYSCALL", um_frame[0] == user_va(u_syscall_ret), 1);
    check("  frame R11: the user's RFLAGS", long(um_frame[1] & 0x202), 0x202);
    check("  frame RIP: the RIP after the SYSCALL", um_frame[2] == user_va(u_syscall_ret), 1);
    check("  frame CS: FLAT_KERNEL_CS64", long(um_frame[3] & 0xffff), FLAT_KERNEL_CS64);
    check("  frame RSP: the user's", um_frame[5] == kUserStack, 1);
    check("  frame SS: FLAT_KERNEL_SS", long(um_frame[6] & 0xffff), FLAT_KERNEL_SS);
    check("  on the kernel stack from stack_switch", um_sp == ((ktop() & ~15ull) - 56), 1);
}

void isolation_checks()
{
    check("user mode reads its data page", long(um_call(user_va(u_load), kUserStack, kUserData, 0)), kSyscallTag);
    check("  the page's word", long(um_rax), long(kDataMark));
    const uint64_t secret = uint64_t(&g_kernel_secret);
    check("user mode reads a kernel page: #PF", long(um_call(user_va(u_load), kUserStack, secret, 0)), 14);
    check("  error code: not present, read, user mode", long(um_frame[2] & 0x1f), 4);
    frame_checks("  RIP: the load", user_va(u_load), 8);
    check("  %cr2: the kernel address", conform_call(c_rd_cr2, 0, 0, 0) == secret, 1);
    check("  the kernel reads it", long(g_kernel_secret), 0x5ec7e7);
}

void gs_checks()
{
    check("set_segment_base(SEGBASE_GS_USER)", hypercall(__HYPERVISOR_set_segment_base, SEGBASE_GS_USER, kUserGs), 0);
    check("set_segment_base(SEGBASE_GS_KERNEL)",
          hypercall(__HYPERVISOR_set_segment_base, SEGBASE_GS_KERNEL, uint64_t(g_kernel_gs)), 0);
    check("%gs:0 in user mode: through the user %gs base", long(um_call(user_va(u_gs), kUserStack, 0, 0)),
          kSyscallTag);
    check("  the user %gs page's word", long(um_rax), long(kUserGsMark));
    check("  back in kernel mode, %gs:0 through the kernel's base",
          long(conform_call(c_rd_gs, 0, 0, 0)), long(kKernelGsMark));
    check("  rdmsr IA32_KERNEL_GS_BASE: the user's", conform_call(c_rdmsr, kMsrShadowGs, 0, 0) == kUserGs, 1);
}

void int80_checks()
{
    // An SS of RPL 0: iret forces RPL 3, as Xen does for Linux's __USER_DS.
    um_ss = kFlatSs & ~3u;
    check("int $0x80 in user mode, DPL 3: its handler", long(um_call(user_va(u_int80), kUserStack, 0, 0)), 0x80);
    um_ss = kFlatSs;
    frame_checks("  RIP past the int, no error code", user_va(u_int80) + 2, 7);
    check("mov %cr0 in user mode: #GP, not emulated", long(um_call(user_va(u_cr0), kUserStack, 0, 0)), 13);
    check("  error code 0", long(um_frame[2]), 0);
    frame_checks("  RIP: the mov", user_va(u_cr0), 8);
}

void in_syscall_checks()
{
    check("iret to user mode without VGCF_in_syscall", long(um_call(user_va(u_regs), kUserStack, 0, 0)),
          kSyscallTag);
    check("  RCX from the frame", long(um_rax), 0x5151);
    check("  R11 from the frame", long(um_rdi), 0x3b3b);
    check("iret to user mode with VGCF_in_syscall",
          long(um_call(user_va(u_regs), kUserStack, 0, VGCF_in_syscall)), kSyscallTag);
    check("  RCX: the RIP (as SYSRET)", um_rax == user_va(u_regs), 1);
    check("  R11: the RFLAGS (as SYSRET)", long(um_rdi & 0x202), 0x202);
}

long evtchn(unsigned cmd, void* arg) { return hypercall(__HYPERVISOR_event_channel_op, cmd, uint64_t(arg)); }

// No event of port p left anywhere (events.cc's quiet).
void quiet(volatile shared_info_t* sh, volatile vcpu_info_t* vi, evtchn_port_t p)
{
    sh->evtchn_pending[p / 64] = sh->evtchn_pending[p / 64] & ~(1ull << (p % 64));
    sh->evtchn_mask[p / 64] = sh->evtchn_mask[p / 64] & ~(1ull << (p % 64));
    vi->evtchn_pending_sel = 0;
    vi->evtchn_upcall_pending = 0;
}

// An IPI to itself sent with upcalls masked; the iret to user mode unmasks
// them (its frame's IF), and the upcall comes before the first user
// instruction, from user mode.
void upcall_checks(volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    callback_register_t cb{CALLBACKTYPE_event, 0, uint64_t(um_event_entry)};
    check("CALLBACKOP_register event", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    evtchn_bind_ipi_t ipi{0, 0};
    check("EVTCHNOP_bind_ipi(vCPU 0)", evtchn(EVTCHNOP_bind_ipi, &ipi), 0);
    quiet(sh, vi, ipi.port);
    vi->evtchn_upcall_mask = 1;
    evtchn_send_t send{ipi.port};
    check("EVTCHNOP_send with upcalls masked", evtchn(EVTCHNOP_send, &send), 0);
    check("iret to user mode unmasking upcalls: the event callback",
          long(um_call(user_va(u_syscall), kUserStack, 0, 0)), kEventTag);
    frame_checks("  RIP: the user's first instruction, not run", user_va(u_syscall), 7);
    check("  evtchn_upcall_mask set on delivery", vi->evtchn_upcall_mask, 1);
    evtchn_close_t close{ipi.port};
    check("EVTCHNOP_close of it", evtchn(EVTCHNOP_close, &close), 0);
    quiet(sh, vi, ipi.port);
}

// EFLAGS.AC set in user mode reaches the frame but not the handler.
void ac_checks()
{
    check("EFLAGS.AC set in user mode, then SYSCALL: the syscall callback",
          long(um_call(user_va(u_ac_syscall), kUserStack, 0, 0)), kSyscallTag);
    check("  frame R11: the user's RFLAGS, AC set", long(um_frame[1] & kAc), long(kAc));
    check("  frame RFLAGS: AC set", long(um_frame[4] & kAc), long(kAc));
    check("  the callback runs with AC clear", long(um_hflags & kAc), 0);
}

// What vCPU 1 saw in user mode (vcpu1_user_mode), for vcpu1_user_checks.
struct Vcpu1User {
    uint64_t tag, frame[8], sp, rax, hflags;
};
volatile Vcpu1User g_vcpu1;

} // namespace

// The user L4 user_mode_checks runs on, built (and made vCPU 0's user base
// pointer) by the first call: main.cc's vcpu_context names it in vCPU 1's
// ctrlreg[1] first. 0 if it could not be built.
uint64_t user_mode_l4(const start_info_t* si, uint64_t free)
{
    if (g_user_l4 == ~0ull) g_user_l4 = build_user_l4(si, free);
    return g_user_l4;
}

// On vCPU 1, in kernel mode (its #BP handler, main.cc): the iret to user
// mode on ctrlreg[1]'s L4, with upcalls masked (its frame's IF clear: vCPU
// 1 has no event callback), to u_nocb, whose SYSCALL, with no syscall
// callback, comes back as the trap table's #UD (um_ud_entry).
void vcpu1_user_mode()
{
    um_rflags = 0x2;
    g_vcpu1.tag = um_call(user_va(u_nocb), kUserStack, 0, 0);
    um_rflags = 0x202;
    for (unsigned i = 0; i < 8; ++i) g_vcpu1.frame[i] = um_frame[i];
    g_vcpu1.sp = um_sp;
    g_vcpu1.rax = um_rax;
    g_vcpu1.hflags = um_hflags;
}

// On vCPU 0 once vCPU 1 went down: Xen 4.17's #UD for a SYSCALL without a
// callback (its switch_to_kernel), bounced from user mode to the kernel
// stack kstack_top (the context's kernel_sp): RIP at the SYSCALL, the
// user's CS, RSP and RFLAGS (DF as the user set it), RCX and R11 as
// SYSCALL left them; the handler runs with DF clear, as Xen 4.17 leaves it
// after a syscall callback's bounce too.
void vcpu1_user_checks(uint64_t kstack_top)
{
    check("vCPU 1 in user mode on ctrlreg[1]'s L4, SYSCALL with no syscall callback: #UD", long(g_vcpu1.tag), 6);
    check("  RAX as the user left it", long(g_vcpu1.rax), 0x1234);
    check("  frame RCX: the RIP after the SYSCALL", g_vcpu1.frame[0] == user_va(u_nocb_syscall) + 2, 1);
    check("  frame R11: the user's RFLAGS, DF set", long(g_vcpu1.frame[1] & kDf), long(kDf));
    check("  frame RIP: the SYSCALL", g_vcpu1.frame[2] == user_va(u_nocb_syscall), 1);
    check("  frame CS: FLAT_RING3_CS64, RPL 3 (user context)", long(g_vcpu1.frame[3] & 0xffff), kFlatCs64);
    check("  frame RFLAGS: DF set", long(g_vcpu1.frame[4] & kDf), long(kDf));
    check("  frame RSP: the user's", g_vcpu1.frame[5] == kUserStack, 1);
    check("  frame SS: the user's, RPL 3", long(g_vcpu1.frame[6] & 3), 3);
    check("  on the kernel stack from kernel_sp", g_vcpu1.sp == ((kstack_top & ~15ull) - 56), 1);
    check("  the #UD handler runs with DF clear (as a syscall callback)", long(g_vcpu1.hflags & kDf), 0);
}

// pvmmu only, once vCPU 1 went down after vcpu1_user_mode: ctx initialised
// again without VGCF_in_kernel, on the user L4 already in its ctrlreg[1],
// at u_nocb on the user stack, with vcpu1_ud_entry for #UD. vCPU 1 starts
// in user mode: its first instructions, on a page only the user L4 maps,
// reach the SYSCALL, whose #UD comes from user mode on the kernel stack.
void vcpu1_user_start(vcpu_guest_context_t& ctx, uint64_t kstack_top)
{
    ctx.flags = 0;
    ctx.user_regs.rip = user_va(u_nocb);
    ctx.user_regs.rsp = kUserStack;
    ctx.trap_ctxt[6] = trap_info_t{6, 0, kFlatCs64, uint64_t(vcpu1_ud_entry)};
    for (unsigned i = 0; i < 8; ++i) vcpu1_ud_frame[i] = 0;
    check("pvmmu: VCPUOP_initialise of vCPU 1, down, in user mode (no VGCF_in_kernel)",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), 0);
    check("  VCPUOP_up", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), 0);
    uint64_t spins = 0;
    while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) != 0 && ++spins < 100000000)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("  its SYSCALL in user mode: #UD at the SYSCALL", vcpu1_ud_frame[2] == user_va(u_nocb_syscall), 1);
    check("  frame CS: RPL 3 (user context)", long(vcpu1_ud_frame[3] & 3), 3);
    check("  frame RSP: the user's", vcpu1_ud_frame[5] == kUserStack, 1);
    check("  on the kernel stack from kernel_sp", vcpu1_ud_frame[7] == ((kstack_top & ~15ull) - 56), 1);
}

// After main.cc's event checks: frames from free + 6 on (main.cc's use
// free ... free + 5), sh and vi vCPU 0's shared_info and vcpu_info.
void user_mode_checks(const start_info_t* si, uint64_t free, volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    const uint64_t l4 = user_mode_l4(si, free);
    if (!l4) return;
    check("stack_switch to the kernel stack",
          hypercall(__HYPERVISOR_stack_switch, FLAT_KERNEL_SS, ktop()), 0);
    callback_register_t cb{};
    cb.type = CALLBACKTYPE_syscall;
    cb.flags = CALLBACKF_mask_events;
    cb.address = uint64_t(um_syscall_entry);
    check("CALLBACKOP_register syscall", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    const trap_info_t user_traps[] = {{6, 0, kFlatCs64, uint64_t(um_ud_entry)},
                                      {13, 0, kFlatCs64, uint64_t(um_gp_entry)},
                                      {14, 0, kFlatCs64, uint64_t(um_pf_entry)},
                                      {0x80, 3, kFlatCs64, uint64_t(um_int80_entry)},
                                      {0, 0, 0, 0}};
    check("set_trap_table of the user-mode entries", set_traps(user_traps), 0);
    syscall_checks();
    isolation_checks();
    gs_checks();
    in_syscall_checks();
    int80_checks();
    ac_checks();
    upcall_checks(sh, vi);
    const trap_info_t kernel_traps[] = {{6, 0, kFlatCs64, uint64_t(conform_stubs + 16 * 6)},
                                        {13, 0, kFlatCs64, uint64_t(conform_stubs + 16 * 13)},
                                        {14, 0, kFlatCs64, uint64_t(conform_stubs + 16 * 14)},
                                        {0, 0, 0, 0}};
    check("set_trap_table back to main.cc's entries", set_traps(kernel_traps), 0);
    conform_vector = ~0ull;
    conform_call(c_load, kUserData, 0, 0);
    check("the user's data page in the kernel's L4: #PF (not mapped)", long(conform_vector), 14);
    check("MMUEXT_NEW_USER_BASEPTR 0 (a kernel thread's)", mmuext(MMUEXT_NEW_USER_BASEPTR, 0), 0);
    check("MMUEXT_UNPIN_TABLE of the user L4", mmuext(MMUEXT_UNPIN_TABLE, l4), 0);
}
