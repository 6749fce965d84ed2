// Instructions that end at the top of the lower half.
// A SYSCALL at 0x7ffffffffffe saves RIP 0x800000000000, which is not
// canonical: returning there by IRETQ faults in ring 0, on the guest's %gs,
// and once stopped the whole machine. Booted twice (tests/qemu/tests.cmake):
// with "role=crash" the domain makes that SYSCALL with no trap table and
// must be crashed, alone; with "role=handled" its #GP, #BP and #OF handlers
// must see, for each instruction below, the vector and the RIP the CPU
// would give, and the domain powers off. The QEMU test checks that both
// domains ended so and the hypervisor ran on.
//
// The same page runs the MOV SS cases of the XSA-260 class (a #DB held over
// an entry into the hypervisor, docs/security.md §7.1 item 4): role=handled
// goes on with them, role=icebp-tf and role=icebp-db run MOV SS then INT1
// alone (the domain may be crashed there). qemu_guest_debug_entry and the
// bochs.* edge tests (tests/qemu/tests.cmake) boot those roles too. Last,
// role=handled maps the page below 4 GiB as well and runs MOV SS / POP SS
// then SYSCALL in compatibility mode (compat_mov_ss_checks).
//
// The page at 0x7ffffffff000 is mapped through three new tables the guest
// takes from its first free frames; its bytes are written through the
// physmap. With role=handled it runs on Xen 4.17 as dom0 too (xen_edge_guest),
// where every check holds as on pvmmu: Xen is the reference.
#include "tiny_guest.h"

using namespace tiny;

#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image
// edge_jump(target, rax, rdi) jumps to target with those registers set and
// returns the vector of the trap it ends with (a handler below records what
// the bounce frame says). The frame, from the handler's RSP: RCX, R11, the
// error code for #GP, then RIP (hypervisor/arch/x86_64/pv/traps.cc).
extern "C" HIDDEN uint64_t edge_jump(uint64_t target, uint64_t rax, uint64_t rdi);
// edge_iret32(rip, rax, rflags): the iret hypercall to FLAT_RING3_CS32:rip
// (compatibility mode, RPL 0: the guest's kernel mode on Xen) with RAX and
// RFLAGS from the frame; it ends in a handler, as edge_jump's code does.
extern "C" HIDDEN uint64_t edge_iret32(uint64_t rip, uint64_t rax, uint64_t rflags);
extern "C" HIDDEN void edge_gp(), edge_bp(), edge_of(), edge_ud(), edge_db();
extern "C" HIDDEN uint64_t edge_rax, edge_error, edge_rip, edge_steps, edge_db_rip, edge_db_rax, edge_ss;
asm(R"(
    .pushsection .text
    .hidden edge_jump, edge_iret32, edge_gp, edge_bp, edge_of, edge_ud, edge_db
    .globl edge_jump, edge_iret32, edge_gp, edge_bp, edge_of, edge_ud, edge_db
edge_iret32:
    mov %rsp, edge_rsp(%rip)
    pushq $0xe02b           /* ss */
    pushq $0x40001fc0       /* rsp: the low stack page (kLow + 0x2000 - 64) */
    pushq %rdx              /* rflags */
    pushq $0xe020           /* cs: FLAT_RING3_CS32, RPL 0 */
    pushq %rdi              /* rip */
    pushq $0                /* flags; the stub pushes RCX, R11, RAX */
    mov %rsi, %rax
    jmp hypercall_page + 23 * 32
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
    jmp 2f
edge_ud:
    mov $6, %ecx
2:  mov %rax, edge_rax(%rip)
    mov 16(%rsp), %rax
    mov %rax, edge_rip(%rip)
    movq $-1, edge_error(%rip)
    mov %ecx, %eax
1:  mov edge_rsp(%rip), %rsp
    ret
/* #DB: counts the single-step, keeps its RIP and the RAX it found, and
 * resumes by the iret hypercall, TF still set in the frame: RCX and R11
 * off, flags 0 on, into the iret stub. */
edge_db:
    mov %rax, edge_db_rax(%rip)
    mov 16(%rsp), %rax
    mov %rax, edge_db_rip(%rip)
    mov edge_db_rax(%rip), %rax
    pop %rcx
    pop %r11
    incq edge_steps(%rip)
    pushq $0
    jmp hypercall_page + 23 * 32
    .popsection
    .pushsection .bss
    .balign 8
    .hidden edge_rax, edge_error, edge_rip, edge_steps, edge_db_rip, edge_db_rax, edge_ss
    .globl edge_rax, edge_error, edge_rip, edge_steps, edge_db_rip, edge_db_rax, edge_ss
edge_steps: .quad 0
edge_db_rip: .quad 0
edge_db_rax: .quad 0
/* The SS selector that MOV SS loads from memory, alone in its 8 bytes: the
 * data breakpoint of the MOV SS checks watches it. */
edge_ss: .quad 0
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


// The MOV SS checks (the XSA-260 class, docs/security.md §7.1 item 4): a
// source of #DB, then MOV SS from edge_ss (RDI), then `next`, then INT3.
// The MOV SS holds its #DB over `next` ("MOV SS and POP SS", SDM Vol. 3A);
// when `next` enters ring 0, a CPU (and Bochs, not TCG) delivers it at the
// first instruction of the hypervisor's entry. RAX is kMagic unless given.
enum class Source { Tf, Breakpoint };
constexpr char kSetTf[] = "\x9c\x48\x81\x0c\x24\x00\x01\x00\x00\x9d";   // pushf; orq $TF, (%rsp); popf
constexpr uint64_t kMagic = 0x5a5a1234, kAt = 0x200;
// "Debug Registers" (SDM Vol. 3B): DR7 L0 (bit 0), RW0 11 (bits 17:16, data
// reads or writes), LEN0 01 (bits 19:18, 2 bytes: the selector); DR6's reset
// value, B0 (bit 0, breakpoint 0 hit) and BS (bit 14, single step).
constexpr uint64_t kDr7WatchSs = 1 | 3 << 16 | 1 << 18, kDr6Default = 0xffff0ff0;
constexpr long kDr6B0 = 1, kDr6Bs = 1 << 14;
uint64_t g_after;   // the address after `next`

long set_dr(unsigned reg, uint64_t v) { return hypercall(__HYPERVISOR_set_debugreg, reg, v); }
long get_dr(unsigned reg) { return hypercall(__HYPERVISOR_get_debugreg, reg); }

uint64_t run_mov_ss(uint8_t* page, Source s, const char* next, unsigned next_len, uint64_t rax = kMagic)
{
    char code[32];
    unsigned n = 0;
    if (s == Source::Tf)
        for (unsigned i = 0; i < sizeof(kSetTf) - 1; ++i) code[n++] = kSetTf[i];
    code[n++] = '\x8e', code[n++] = '\x17';   // mov (%rdi), %ss
    for (unsigned i = 0; i < next_len; ++i) code[n++] = next[i];
    g_after = kPage + kAt + n;
    code[n++] = '\xcc';
    edge_steps = edge_db_rip = edge_db_rax = 0;
    if (s == Source::Breakpoint) {
        check("set_debugreg(6)", set_dr(6, kDr6Default), 0);
        check("set_debugreg(0): the selector's address", set_dr(0, uint64_t(&edge_ss)), 0);
        check("set_debugreg(7): watch it", set_dr(7, kDr7WatchSs), 0);
    }
    const uint64_t vector = run(page, kAt, code, n, rax, uint64_t(&edge_ss));
    if (s == Source::Breakpoint) check("set_debugreg(7): off", set_dr(7, 0), 0);
    return vector;
}

void set_traps()
{
    trap_info_t traps[] = {{1, 0, FLAT_RING3_CS64, uint64_t(&edge_db)},
                           {3, 3, FLAT_RING3_CS64, uint64_t(&edge_bp)},
                           {4, 3, FLAT_RING3_CS64, uint64_t(&edge_of)},
                           {6, 0, FLAT_RING3_CS64, uint64_t(&edge_ud)},
                           {13, 0, FLAT_RING3_CS64, uint64_t(&edge_gp)},
                           {0, 0, 0, 0}};
    check("#DB, #BP, #OF, #UD and #GP handlers", hypercall(__HYPERVISOR_set_trap_table, uint64_t(traps)), 0);
}

// Each instruction from ring 3 that enters ring 0 through the IDT or SYSCALL
// right after a MOV SS with a pending #DB: the hypervisor drops the held-over
// #DB (traps.cc held_over_debug_trap, as Xen 4.17 does with a #DB in its own
// context) and the guest sees what that instruction raises, its registers
// intact. INT1 (ICEBP) is apart: role=icebp-tf and role=icebp-db.
void mov_ss_checks(uint8_t* page, Source s)
{
    write(s == Source::Tf ? "edge guest: MOV SS checks, #DB source TF\n"
                          : "edge guest: MOV SS checks, #DB source a data breakpoint on the selector\n");
    check("MOV SS, SYSCALL, INT3: #BP", run_mov_ss(page, s, "\x0f\x05", 2, 63), 3);
    check("  the hypercall ran", long(edge_rax), -XEN_ENOSYS);
    check("  at the int3 after it", edge_rip == g_after + 1, 1);
    check("MOV SS, INT3: #BP", run_mov_ss(page, s, "\xcc", 1), 3);
    check("  after the int3, RAX intact", edge_rip == g_after && edge_rax == kMagic, 1);
    check("MOV SS, INT $3: #BP", run_mov_ss(page, s, "\xcd\x03", 2), 3);
    check("  after the int $3, RAX intact", edge_rip == g_after && edge_rax == kMagic, 1);
    check("MOV SS, INT $4: #OF", run_mov_ss(page, s, "\xcd\x04", 2), 4);
    check("  after the int $4, RAX intact", edge_rip == g_after && edge_rax == kMagic, 1);
    // A DPL-0 gate: #GP naming it (the hypervisor's #GP stub).
    check("MOV SS, INT $5: #GP", run_mov_ss(page, s, "\xcd\x05", 2), 13);
    check("  at the int $5, RAX intact", edge_rip == g_after - 2 && edge_rax == kMagic, 1);
    check("  error code: a gate of the IDT", long(edge_error & 7), 2);
    // INT $1 too (#DB's gate, DPL 0, unlike INT1): #GP, not the #DB stub.
    check("MOV SS, INT $1: #GP", run_mov_ss(page, s, "\xcd\x01", 2), 13);
    check("  at the int $1, RAX intact", edge_rip == g_after - 2 && edge_rax == kMagic, 1);
    // INTO is invalid in 64-bit mode: #UD (the hypervisor's #UD stub).
    check("MOV SS, INTO: #UD", run_mov_ss(page, s, "\xce", 1), 6);
    check("  at the into, RAX intact", edge_rip == g_after - 1 && edge_rax == kMagic, 1);
    // The same source held over an instruction that stays in ring 3 reaches
    // the guest: its #DB (after the NOP; after the MOV SS too under TCG),
    // DR6.BS for TF, DR6.B0 for the breakpoint.
    check("  DR6 reset", set_dr(6, kDr6Default), 0);
    check("MOV SS, NOP, INT3: #BP", run_mov_ss(page, s, "\x90", 1), 3);
    check("  the source's #DB, RAX intact", edge_steps >= 1 && edge_db_rax == kMagic, 1);
    const long named = s == Source::Tf ? kDr6Bs : kDr6B0;
    check("  DR6 names it", get_dr(6) & named, named);
    set_dr(6, kDr6Default);
}

// The same page mapped at kLow (below 4 GiB, where compatibility mode's
// 32-bit EIP reaches: L4 slot 0, L3 entry 1, L2 and L1 entry 0) through
// three more tables of the guest's, read-only like the others, and a stack
// page after it: compatibility mode keeps only ESP, so the bounce frame of
// an event there goes below 4 GiB.
constexpr uint64_t kLow = 0x40000000;
uint64_t* g_low_stack;   // the stack page, through the physmap

bool map_low_page(const start_info_t* si, uint64_t free)
{
    const uint64_t* m = p2m(si);
    if (reinterpret_cast<const uint64_t*>(si->pt_base)[0]) return false;   // L4 slot 0 taken
    const uint64_t l3 = free + 4, l2 = free + 5, l1 = free + 6, code = free + 3, stack = free + 7;
    const uint64_t tables[] = {l3, l2, l1};
    for (uint64_t g : tables) {
        for (int i = 0; i < 512; ++i) gpfn_bytes(g)[i] = 0;
        const mmu_update_t ro{l1_entry_of(si, uint64_t(gpfn_bytes(g))), (m[g] << 12) | kPresentUser};
        check("a new table made read-only", mmu_update(&ro, 1), 0);
    }
    const uint64_t l4 = m[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    const mmu_update_t link[] = {{(l4 << 12), (m[l3] << 12) | kTable},   // top down: each table validated first
                                 {(m[l3] << 12) + 8, (m[l2] << 12) | kTable},
                                 {(m[l2] << 12), (m[l1] << 12) | kTable},
                                 {(m[l1] << 12), (m[code] << 12) | kPresentUser},
                                 {(m[l1] << 12) + 8, (m[stack] << 12) | kTable}};   // RW: the stack
    check("the page mapped below 4 GiB too, a stack page after it", mmu_update(link, 5), 0);
    g_low_stack = gpfn_bytes(stack);
    return true;
}

// MOV SS or POP SS, then SYSCALL, in compatibility mode (FLAT_RING3_CS32,
// entered by iret), TF set first: the single step of the MOV SS may be held
// over the SYSCALL ("MOV SS and POP SS", SDM Vol. 3A), which enters through
// CSTAR's entry (docs/security.md §7.16); a CPU that holds it over delivers
// it at that entry's first instruction, in ring 0, on the guest's %gs, where
// the hypervisor drops it as at the 64-bit entry. Either way the SYSCALL,
// with no syscall32 callback, is the #UD Xen delivers, at the SYSCALL.
// Neither TCG nor Bochs 2.7 (bochs.edge_and_debug_entry) holds this one over: the
// check passes there without the hypervisor's rule too.
void compat_mov_ss_checks(uint8_t* page)
{
    write("edge guest: compatibility-mode MOV SS and POP SS, then SYSCALL, #DB source TF\n");
    constexpr uint64_t kAt32 = 0x400, kIf = 0x200, kFlatSs = 0xe02b;
    // pushf; orl $TF, (%esp); popf (TF set as the 64-bit checks set it), then
    // mov %eax, %ss; syscall; int3 -- and at +0x40 the same with pop %ss,
    // which pops what the low stack page holds at ESP.
    const struct {
        const char* what;
        unsigned at;
        const char* code;
        unsigned len;
    } cases[] = {{"compat MOV SS, SYSCALL: #UD at the SYSCALL", 0, "\x9c\x81\x0c\x24\x00\x01\x00\x00\x9d\x8e\xd0\x0f\x05\xcc", 14},
                 {"compat POP SS, SYSCALL: #UD at the SYSCALL", 0x40, "\x9c\x81\x0c\x24\x00\x01\x00\x00\x9d\x17\x0f\x05\xcc", 13}};
    for (int i = 0; i < 4096; ++i) page[i] = 0x90;
    for (const auto& c : cases)
        for (unsigned i = 0; i < c.len; ++i) page[kAt32 + c.at + i] = uint8_t(c.code[i]);
    for (const auto& c : cases) {
        edge_rax = edge_error = edge_rip = 0;
        g_low_stack[0xfc0 / 8] = kFlatSs;   // what POP SS pops (ESP: edge_iret32's)
        const uint64_t syscall_at = kLow + kAt32 + c.at + c.len - 3;
        check(c.what, edge_iret32(kLow + kAt32 + c.at, kFlatSs, kIf | 2), 6);
        check("  at the SYSCALL", edge_rip == syscall_at, 1);
    }
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    uint8_t* page = map_edge_page(si, (initial_sp - XENPV_VIRT_BASE + 4095) >> 12);
    static constexpr char kSyscall[] = "\x0f\x05";
    uint64_t ss;
    asm volatile("mov %%ss, %0" : "=r"(ss));
    edge_ss = ss;   // what the MOV SS checks load
    if (has_word(si, "role=crash")) {
        write("edge guest: syscall at 0x7ffffffffffe with no trap table\n");
        run(page, 0xffe, kSyscall, 2, 63);
        write("edge guest: FAILED: the domain ran on after a return to a non-canonical rip\n");
        shutdown(SHUTDOWN_poweroff);   // "crash" is what the test waits for
        for (;;) {
        }
    }

    set_traps();
    // MOV SS, then INT1 (ICEBP, F1), which enters through vector 1 whatever
    // the gate's DPL. Where the CPU holds the #DB over the INT1, it lands on
    // the hypervisor's #DB stub, on the IST stack the INT1's frame is on, and
    // overwrites that frame: the domain is crashed (traps.cc). Bochs 2.7
    // drops the held-over #DB (the guest sees its INT1's #DB), QEMU 7.2's TCG
    // raises #UD for INT1 in 64-bit mode; selftest=dbentry makes the CPU's
    // case (qemu_guest_debug_entry).
    const bool icebp_tf = has_word(si, "role=icebp-tf");
    if (icebp_tf || has_word(si, "role=icebp-db")) {
        write(icebp_tf ? "edge guest: TF, MOV SS, INT1\n" : "edge guest: data breakpoint, MOV SS, INT1\n");
        const uint64_t v = run_mov_ss(page, icebp_tf ? Source::Tf : Source::Breakpoint, "\xf1", 1);
        check("MOV SS, INT1, INT3: #BP (TCG: #UD)", v == 3 || v == 6, 1);
        if (v == 3)
            check("  #DB after the INT1, RAX intact", edge_db_rip == g_after && edge_db_rax == kMagic, 1);
        else
            check("  #UD at the INT1", edge_rip == g_after - 1 && edge_rax == kMagic, 1);
        finish("edge guest");
    }

    // A SYSCALL at the top: the hypercall runs, then the guest gets #GP(0) at the RIP
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

    // INT n at the top: INT3 and INT 4 reach the guest's #BP and #OF handlers (the
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

    // INT1 alone: the guest's #DB at the RIP after it, then the INT3.
    edge_steps = 0;
    // QEMU 7.2's TCG has no INT1 in 64-bit mode: #UD at it.
    const uint64_t int1 = run(page, 0x100, "\xf1\xcc", 2, kMagic);
    check("INT1, INT3: #BP (TCG: #UD)", int1 == 3 || int1 == 6, 1);
    if (int1 == 3)
        check("  one #DB after the INT1, RAX intact",
              edge_steps == 1 && edge_db_rip == kPage + 0x101 && edge_db_rax == kMagic, 1);
    else
        check("  #UD at the INT1", edge_rip == kPage + 0x100 && edge_rax == kMagic, 1);
    // POP SS is invalid in 64-bit mode: #UD, no MOV SS window.
    check("POP SS: #UD", run(page, 0x100, "\x17", 1), 6);
    check("  at the pop", edge_rip == kPage + 0x100, 1);
    mov_ss_checks(page, Source::Tf);
    mov_ss_checks(page, Source::Breakpoint);
    if (map_low_page(si, (initial_sp - XENPV_VIRT_BASE + 4095) >> 12)) compat_mov_ss_checks(page);
    else write("edge guest: L4 slot 0 in use: no compatibility-mode checks\n");
    finish("edge guest");
}
