// Instructions that end at the top of the lower half (issue 12, findings 1
// and 9). A SYSCALL at 0x7ffffffffffe saves RIP 0x800000000000, which is not
// canonical: returning there by IRETQ faults in ring 0, on the guest's %gs,
// and once stopped the whole machine. Booted twice (tests/qemu/tests.cmake):
// with "role=crash" the domain makes that SYSCALL with no trap table and
// must be crashed, alone; with "role=handled" its #GP, #BP and #OF handlers
// must see, for each instruction below, the vector and the RIP the CPU
// would give, and the domain powers off. The QEMU test checks that both
// domains ended so and the hypervisor ran on.
//
// The page at 0x7ffffffff000 is mapped through three new tables the guest
// takes from its first free frames; its bytes are written through the
// physmap. With role=handled it runs on Xen 4.17 as dom0 too (xen_edge_guest),
// where every check holds as on pvmmu: the reference for findings 1 and 9.
#include "tiny_guest.h"

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image
// edge_jump(target, rax, rdi) jumps to target with those registers set and
// returns the vector of the trap it ends with (a handler below records what
// the bounce frame says). The frame, from the handler's RSP: RCX, R11, the
// error code for #GP, then RIP (guest_traps.cc).
extern "C" HIDDEN uint64_t edge_jump(uint64_t target, uint64_t rax, uint64_t rdi);
extern "C" HIDDEN void edge_gp(), edge_bp(), edge_of(), edge_db();
extern "C" HIDDEN uint64_t edge_rax, edge_error, edge_rip, edge_steps;
asm(R"(
    .pushsection .text
    .hidden edge_jump, edge_gp, edge_bp, edge_of, edge_db
    .globl edge_jump, edge_gp, edge_bp, edge_of, edge_db
edge_jump:
    mov %rsp, edge_rsp(%rip)
    mov %rdi, %r11
    mov %rsi, %rax
    mov %rdx, %rdi
    jmp *%r11
edge_gp:
    mov %rax, edge_rax(%rip)
    mov 16(%rsp), %rcx
    mov %rcx, edge_error(%rip)
    mov 24(%rsp), %rcx
    mov %rcx, edge_rip(%rip)
    mov $13, %eax
    jmp 1f
edge_bp:
    mov $3, %ecx
    jmp 2f
edge_of:
    mov $4, %ecx
2:  mov %rax, edge_rax(%rip)
    mov 16(%rsp), %rax
    mov %rax, edge_rip(%rip)
    movq $-1, edge_error(%rip)
    mov %ecx, %eax
1:  mov edge_rsp(%rip), %rsp
    ret
/* #DB: counts the single-step and resumes by the iret hypercall, TF still
 * set in the frame: RCX and R11 off, flags 0 on, into the iret stub. */
edge_db:
    pop %rcx
    pop %r11
    incq edge_steps(%rip)
    pushq $0
    jmp hypercall_page + 23 * 32
    .popsection
    .pushsection .bss
    .balign 8
    .hidden edge_rax, edge_error, edge_rip, edge_steps
    .globl edge_rax, edge_error, edge_rip, edge_steps
edge_steps: .quad 0
edge_rsp: .quad 0
edge_rax: .quad 0
edge_error: .quad 0
edge_rip: .quad 0
    .popsection
)");

namespace {

constexpr uint64_t kPage = 0x7ffffffff000, kTop = 0x800000000000;
constexpr uint64_t kPresentUser = 0x25, kTable = 0x27;   // P|US|A, P|RW|US|A

long mmu_update(const mmu_update_t* u, unsigned n)
{
    return hypercall(__HYPERVISOR_mmu_update, uint64_t(u), n, 0, DOMID_SELF);
}

// Maps kPage (L4 slot 255, L3/L2/L1 entry 511) to a frame of the guest's and
// returns that frame's bytes in the physmap. The frames are the first four
// above the boot structures (`free`, the initial RSP's gpfn: mapped on Xen
// too). The new tables are zeroed and made read-only in the physmap before
// they are linked (a table must have no writable mapping).
uint8_t* map_edge_page(const start_info_t* si, uint64_t free)
{
    const uint64_t l3 = free, l2 = free + 1, l1 = free + 2, code = free + 3;
    const uint64_t* m = p2m(si);
    const uint64_t tables[] = {l3, l2, l1};
    for (uint64_t g : tables) {
        for (int i = 0; i < 512; ++i) gpfn_bytes(g)[i] = 0;
        const mmu_update_t ro{l1_entry_of(si, uint64_t(gpfn_bytes(g))), (m[g] << 12) | kPresentUser};
        check("a new table made read-only", mmu_update(&ro, 1), 0);
    }
    const uint64_t l4 = m[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    const mmu_update_t link[] = {{(l4 << 12) + 255 * 8, (m[l3] << 12) | kTable},
                                 {(m[l3] << 12) + 511 * 8, (m[l2] << 12) | kTable},
                                 {(m[l2] << 12) + 511 * 8, (m[l1] << 12) | kTable},
                                 {(m[l1] << 12) + 511 * 8, (m[code] << 12) | kPresentUser}};
    check("the page below the top of the lower half mapped", mmu_update(link, 4), 0);
    return reinterpret_cast<uint8_t*>(gpfn_bytes(code));
}

// Writes `code` at the page's offset `at` (the rest stays NOPs) and jumps there.
uint64_t run(uint8_t* page, uint64_t at, const char* code, unsigned len, uint64_t rax = 0, uint64_t rdi = 0)
{
    for (int i = 0; i < 4096; ++i) page[i] = 0x90;
    for (unsigned i = 0; i < len; ++i) page[at + i] = uint8_t(code[i]);
    edge_rax = edge_error = edge_rip = 0;
    return edge_jump(kPage + at, rax, rdi);
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    uint8_t* page = map_edge_page(si, (initial_sp - XENPV_VIRT_BASE + 4095) >> 12);
    static constexpr char kSyscall[] = "\x0f\x05";
    if (has_word(si, "role=crash")) {
        write("edge guest: syscall at 0x7ffffffffffe with no trap table\n");
        run(page, 0xffe, kSyscall, 2, 63);
        write("edge guest: FAILED: the domain ran on after a return to a non-canonical rip\n");
        shutdown(SHUTDOWN_poweroff);   // "crash" is what the test waits for
        for (;;) {
        }
    }

    trap_info_t traps[] = {{1, 0, FLAT_RING3_CS64, uint64_t(&edge_db)},
                           {3, 3, FLAT_RING3_CS64, uint64_t(&edge_bp)},
                           {4, 3, FLAT_RING3_CS64, uint64_t(&edge_of)},
                           {13, 0, FLAT_RING3_CS64, uint64_t(&edge_gp)},
                           {0, 0, 0, 0}};
    check("#BP, #OF and #GP handlers", hypercall(__HYPERVISOR_set_trap_table, uint64_t(traps)), 0);

    // Finding 1: the hypercall runs, then the guest gets #GP(0) at the RIP
    // after the SYSCALL, as a CPU fetching there would raise it.
    check("an unknown hypercall at the top: #GP", run(page, 0xffe, kSyscall, 2, 63), 13);
    check("  its result", long(edge_rax), -XEN_ENOSYS);
    check("  error code 0", long(edge_error), 0);
    check("  at 0x800000000000", edge_rip == kTop, 1);
    check("xen_version at the top: #GP", run(page, 0xffe, kSyscall, 2, __HYPERVISOR_xen_version, XENVER_version), 13);
    check("  its result", long(edge_rax) > 0, 1);
    check("  at 0x800000000000", edge_rip == kTop, 1);
    // Running into the top: the CPU's own #GP, from ring 3.
    check("NOPs into the top: #GP", run(page, 0xff0, "", 0), 13);

    // Finding 9: INT3 and INT 4 reach the guest's #BP and #OF handlers (the
    // RIP after the instruction), any other INT n is #GP with an error code
    // that names a gate of the IDT.
    check("int3: #BP", run(page, 0x100, "\xcc", 1), 3);
    check("  after the int3", edge_rip == kPage + 0x101, 1);
    check("int $3: #BP", run(page, 0x100, "\xcd\x03", 2), 3);
    check("int $4: #OF", run(page, 0x100, "\xcd\x04", 2), 4);
    check("  after the int $4", edge_rip == kPage + 0x102, 1);
    check("int $5: #GP", run(page, 0x100, "\xcd\x05", 2), 13);
    // The IDT bit; the index is the vector on a CPU ("Error Code", SDM Vol.
    // 3A), the vector times two under QEMU's TCG (0x52 where a CPU gives 0x2a).
    check("  error code: a gate of the IDT", long(edge_error & 7), 2);
    check("int3 at the top: #BP", run(page, 0xfff, "\xcc", 1), 3);
    check("  at 0x800000000000", edge_rip == kTop, 1);

    // TF set, then MOV SS right before SYSCALL or INT3: the #DB the MOV SS
    // raises is held over that instruction ("MOV SS and POP SS", SDM Vol.
    // 3A) and, on a CPU, delivered at the hypervisor's entry, in ring 0
    // (the XSA-260 class; traps.cc held_over_debug_trap). The guest must
    // see its hypercall done, its single-steps and its #BP, and nothing else.
    static constexpr char kStepSyscall[] = "\x9c\x48\x81\x0c\x24\x00\x01\x00\x00\x9d"   // pushf; orq $TF; popf
                                           "\x8c\xd1\x8e\xd1\x0f\x05\xcc";   // mov %ss,%ecx; mov %ecx,%ss; syscall; int3
    edge_steps = 0;
    check("TF, MOV SS, SYSCALL, INT3: #BP", run(page, 0x200, kStepSyscall, sizeof(kStepSyscall) - 1, 63), 3);
    check("  the hypercall ran", long(edge_rax), -XEN_ENOSYS);
    check("  single-stepped", edge_steps > 0, 1);
    static constexpr char kStepInt3[] = "\x9c\x48\x81\x0c\x24\x00\x01\x00\x00\x9d\x8c\xd1\x8e\xd1\xcc";
    edge_steps = 0;
    check("TF, MOV SS, INT3: #BP", run(page, 0x200, kStepInt3, sizeof(kStepInt3) - 1), 3);
    check("  after the int3", edge_rip == kPage + 0x200 + sizeof(kStepInt3) - 1, 1);
    finish("edge guest");
}
