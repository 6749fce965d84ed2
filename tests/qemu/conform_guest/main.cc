// Xen PV ABI conformance of traps and emulation (issue 14, items 4 and 5;
// docs/abi.md §10 "Emulation", §12): written from Xen's public headers, so
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
// - Emulated privileged instructions: mov from CR0/CR2/CR3/CR4, mov to CR0
//   (TS) and CR2, clts, wbinvd, rdmsr of EFER; #GP(0) for a change of CR0
//   other than TS and for an MSR no one knows.
// - fpu_taskswitch: TS set, the next x87 instruction raises #NM, after
//   which TS is clear.
// - Xen's forced-emulation prefix before CPUID: Xen's leaves; Xen's
//   hypercall-page MSR writes the hypercall page into a frame.
// - vm_assist's checks.
// - The read-only M2P (issue 14 item 3): XENMEM_machphys_mapping as Xen
//   answers it; at MACH2PHYS_VIRT_START + mfn * 8 each of the guest's frames
//   reads its gpfn; a frame no domain has (pvmmu: the hypervisor's; Xen: its
//   shared_info frame, a page of Xen's) reads INVALID_M2P_ENTRY; a store is
//   a #PF (present, write, kernel mode) and changes nothing. memory_op's
//   reservation sub-ops about the caller, -ESRCH, -EINVAL, -ENOSYS.
#include <xen/arch-x86/cpuid.h>

#include "tiny_guest.h"

#include <xen/memory.h>

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image
// conform_call(fn, a0, a1, a2) calls fn(a0, a1, a2) and returns its RAX; an
// exception on the way goes to conform_stubs + 16 * vector, which records the
// vector and the three words of the bounce frame after RCX and R11 (with an
// error code: it, RIP, CS; without: RIP, CS, RFLAGS) and returns to
// conform_call's caller with RAX -1.
extern "C" HIDDEN uint64_t conform_call(const void* fn, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0);
extern "C" HIDDEN char conform_stubs[], conform_int[];
extern "C" HIDDEN uint64_t conform_vector, conform_w[3];
extern "C" HIDDEN char c_rd_cr0[], c_rd_cr2[], c_rd_cr3[], c_rd_cr3_r9[], c_rd_cr4[], c_wr_cr0[], c_wr_cr2[],
    c_load[], c_clts[], c_wbinvd[], c_hlt[], c_rdmsr[], c_wrmsr[], c_inb[], c_fnop[], c_int3[], c_xen_cpuid[];
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
SNIPPET c_clts
    clts; xor %eax, %eax; ret
SNIPPET c_wbinvd
    wbinvd; xor %eax, %eax; ret
SNIPPET c_hlt
    hlt; xor %eax, %eax; ret
SNIPPET c_rdmsr
    mov %edi, %ecx; rdmsr; shl $32, %rdx; or %rdx, %rax; ret
SNIPPET c_wrmsr
    mov %edi, %ecx; mov %esi, %eax; mov %rsi, %rdx; shr $32, %rdx; wrmsr; xor %eax, %eax; ret
SNIPPET c_inb
    mov %edi, %edx; xor %eax, %eax; inb %dx, %al; ret
SNIPPET c_fnop
    fnop; xor %eax, %eax; ret
SNIPPET c_int3
    int3; xor %eax, %eax; ret
/* c_xen_cpuid(leaf, regs[4]): Xen's forced-emulation prefix, then CPUID. */
SNIPPET c_xen_cpuid
    push %rbx
    mov %edi, %eax
    xor %ecx, %ecx
    ud2; .ascii "xen"; cpuid
    mov %eax, (%rsi); mov %ebx, 4(%rsi); mov %ecx, 8(%rsi); mov %edx, 12(%rsi)
    pop %rbx
    xor %eax, %eax
    ret
    .popsection
    .pushsection .bss
    .balign 8
    .hidden conform_vector, conform_w
    .globl conform_vector, conform_w
conform_rsp: .quad 0
conform_vector: .quad 0
conform_w: .quad 0, 0, 0
    .popsection
)");

namespace {

constexpr uint64_t kNoTrap = ~0ull;
constexpr uint64_t kCr0Ts = 1u << 3;

// Runs fn; the vector it ended with, kNoTrap when it returned.
uint64_t trap_of(const void* fn, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t* rax = nullptr)
{
    conform_vector = kNoTrap;
    conform_w[0] = conform_w[1] = conform_w[2] = 0;
    const uint64_t r = conform_call(fn, a0, a1);
    if (rax) *rax = r;
    return conform_vector;
}

uint64_t int_n(unsigned n) { return trap_of(conform_int + 4 * n); }

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
    // The bounce frame's CS carries Xen's saved upcall mask in bits 32-39.
    check("  no error code: CS next", (conform_w[1] & 0xffff) | 3, FLAT_RING3_CS64);
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

    // Not emulated for a PV kernel, on Xen (dom0 included) as on pvmmu.
    check("inb from port 0x80: #GP", trap_of(c_inb, 0x80), 13);
    check("hlt: #GP", trap_of(c_hlt), 13);
    check("  error code 0", long(conform_w[0]), 0);
    (void)pvmmu;
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
    if (!pvmmu) return;
    check("vm_assist enable writable_pagetables: -EINVAL on pvmmu",
          hypercall(__HYPERVISOR_vm_assist, VMASST_CMD_enable, VMASST_TYPE_writable_pagetables), -XEN_EINVAL);
    check("update_descriptor: -ENOSYS on pvmmu", hypercall(__HYPERVISOR_update_descriptor, 0, 0), -XEN_ENOSYS);
}

// c_store(va, v): a store of v to va.
extern "C" HIDDEN char c_store[];
asm(R"(
    .pushsection .text
    .hidden c_store
    .globl c_store
c_store:
    mov %rsi, (%rdi); xor %eax, %eax; ret
    .popsection
)");

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

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    const bool pvmmu = g_pvmmu = on_pvmmu();
    write(pvmmu ? "conform guest: on pvmmu\n" : "conform guest: on Xen\n");
    traps();
    emulation(si, pvmmu);
    hypercall_msr(si, (initial_sp - XENPV_VIRT_BASE + 4095) >> 12);
    hypercalls(pvmmu);
    m2p(si, pvmmu);
    memory_queries(si, pvmmu, ((initial_sp + 4095) & ~4095ull) + 4096);
    finish("conform guest");
}
