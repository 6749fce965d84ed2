// The hostile guest's random instructions (docs/security.md §7.10): privileged
// and faulting instructions of every kind from ring 3, memory accesses and
// control transfers to every kind of address (the guest's own, read-only,
// unmapped, the hypervisor's, non-canonical, across page and canonical
// boundaries), SYSCALLs of its own at page and canonical boundaries, and
// iret hypercalls with random frames. Each says which exceptions it may raise
// (for #PF, at which address and with which error code); anything else is a
// failure, and so is RFLAGS with IF off or IOPL up afterwards (traps.cc).
#include "hostile.h"

#define SNIPPET(n) extern "C" HIDDEN char n[], n##_f[], n##_e[];
#define SNIPPETS(X)                                                                                          \
    X(hs_ud2) X(hs_ud0) X(hs_into) X(hs_int3) X(hs_int3_cd) X(hs_int1) X(hs_aaa) X(hs_pop_ss) X(hs_lock_nop)  \
    X(hs_too_long) X(hs_cli) X(hs_sti) X(hs_hlt) X(hs_clts) X(hs_wbinvd) X(hs_invd) X(hs_swapgs)              \
    X(hs_sysretq) X(hs_sysenter) X(hs_sysexit) X(hs_rsm) X(hs_getsec) X(hs_vmcall) X(hs_vmmcall) X(hs_invlpg) \
    X(hs_lgdt) X(hs_lidt) X(hs_lldt) X(hs_ltr) X(hs_lmsw) X(hs_rd_cr0) X(hs_rd_cr2) X(hs_rd_cr3) X(hs_rd_cr4) \
    X(hs_rd_cr8) X(hs_wr_cr0) X(hs_wr_cr3) X(hs_wr_cr4) X(hs_wr_cr8) X(hs_rd_dr7) X(hs_wr_dr7) X(hs_wr_dr0)   \
    X(hs_rdmsr) X(hs_wrmsr) X(hs_rdpmc) X(hs_xsetbv) X(hs_monitor) X(hs_mwait) X(hs_inb_dx) X(hs_inw_dx)     \
    X(hs_inl_dx) X(hs_outb_dx) X(hs_outw_dx) X(hs_outl_dx) X(hs_inb_80) X(hs_outb_f4) X(hs_outl_f4)          \
    X(hs_insb) X(hs_rep_outsb) X(hs_sldt) X(hs_str) X(hs_smsw) X(hs_sgdt) X(hs_sidt) X(hs_rdtscp)            \
    X(hs_xgetbv) X(hs_cpuid) X(hs_wrgsbase) X(hs_wrfsbase) X(hs_rdgsbase) X(hs_fninit) X(hs_xorps)           \
    X(hs_vxorps) X(hs_lar) X(hs_lsl) X(hs_verr) X(hs_verw) X(hs_popf_iopl) X(hs_div0) X(hs_idiv_overflow)    \
    X(hs_div8_overflow) X(hs_load1) X(hs_load2) X(hs_load4) X(hs_load8) X(hs_load16) X(hs_push_mem)          \
    X(hs_clflush) X(hs_prefetch) X(hs_store1) X(hs_store2) X(hs_store4) X(hs_store8) X(hs_xchg8)             \
    X(hs_cmpxchg8) X(hs_cmpxchg16b) X(hs_rep_movsb) X(hs_rep_movsb_back) X(hs_rep_stosq) X(hs_jmp) X(hs_call) \
    X(hs_ret) X(hs_lret) X(hs_iretq) X(hs_mov_ds) X(hs_mov_es) X(hs_mov_fs) X(hs_mov_gs) X(hs_mov_ss)        \
    X(hs_ss_int3) X(hs_ss_syscall) X(hs_boundary) X(hs_tf_syscall) X(hs_tf_ss_syscall) X(hs_iret_hypercall)
SNIPPETS(SNIPPET)
extern "C" HIDDEN char hostile_int_n[];

namespace hostile {

namespace {

// Bit v: exception v may be raised; kNone: nothing may be.
constexpr uint32_t kNone = 1u << 31;
constexpr uint32_t V(unsigned v) { return 1u << v; }
constexpr uint32_t kDE = V(0), kDB = V(1), kBP = V(3), kOF = V(4), kUD = V(6), kNM = V(7), kNP = V(11),
                   kSS = V(12), kGP = V(13), kPF = V(14);

enum class Arg : uint8_t { None, Load, Store, Jump, Port, Value, Selector, Copy, Fill, Cpuid };

struct Insn {
    const char* name;
    const char *fn, *at, *past;
    uint32_t expect;   // for Arg::None, Port, Value, Selector, Cpuid; memory ones add the address's
    Arg arg;
    uint8_t size;
};

#define I(n, e, a, s) Insn{#n, n, n##_f, n##_e, e, Arg::a, s}
const Insn kInsns[] = {
    I(hs_ud2, kUD, None, 0), I(hs_ud0, kUD, None, 0), I(hs_into, kUD, None, 0),
    // INT3 and INT 3: #GP through a DPL-0 gate, or #BP once the gate is DPL 3.
    I(hs_int3, kBP | kGP, None, 0), I(hs_int3_cd, kBP | kGP, None, 0), I(hs_int1, kDB | kGP | kUD, None, 0),   // ICEBP: #DB; #UD under some emulators
    I(hs_aaa, kUD, None, 0), I(hs_pop_ss, kUD, None, 0), I(hs_lock_nop, kUD, None, 0),
    I(hs_too_long, kGP | kUD, None, 0),
    // Emulated as Xen emulates them for a PV kernel: clts, wbinvd, mov from
    // CR0/2/3/4, mov to CR0 (only TS may change), CR3 (an L4 of the
    // domain's), CR4 (DE kept, the rest ignored), mov to and from the debug
    // registers (set_debugreg's checks: run_insn), rdmsr of FS/GS bases and
    // EFER, wrmsr of the FS/GS bases (set_segment_base's checks); port I/O, cli, sti stay #GP at the virtual IOPL 0, which the
    // guest never raises (docs/abi.md §10 "Emulation", §12).
    I(hs_cli, kGP, None, 0), I(hs_sti, kGP, None, 0), I(hs_hlt, kGP, None, 0), I(hs_clts, kNone, None, 0),
    I(hs_wbinvd, kNone, None, 0), I(hs_invd, kGP, None, 0), I(hs_swapgs, kGP | kUD, None, 0),
    I(hs_sysretq, kGP | kUD, None, 0), I(hs_sysenter, kGP | kUD, None, 0), I(hs_sysexit, kGP | kUD, None, 0),
    I(hs_rsm, kUD, None, 0), I(hs_getsec, kUD | kGP, None, 0), I(hs_vmcall, kUD | kGP, None, 0),
    I(hs_vmmcall, kUD | kGP, None, 0), I(hs_invlpg, kGP, Value, 0), I(hs_lgdt, kGP | kPF, Value, 0),
    I(hs_lidt, kGP | kPF, Value, 0), I(hs_lldt, kGP, Selector, 0), I(hs_ltr, kGP, Selector, 0),
    I(hs_lmsw, kGP, Value, 0),
    I(hs_rd_cr0, kNone, None, 0), I(hs_rd_cr2, kNone, None, 0), I(hs_rd_cr3, kNone, None, 0),
    I(hs_rd_cr4, kNone, None, 0), I(hs_rd_cr8, kGP, None, 0), I(hs_wr_cr0, kGP | kNone, Value, 0),
    I(hs_wr_cr3, kGP | kNone, Value, 0), I(hs_wr_cr4, kNone, Value, 0), I(hs_wr_cr8, kGP, Value, 0),
    I(hs_rd_dr7, kNone, None, 0), I(hs_wr_dr7, 0, Value, 0), I(hs_wr_dr0, 0, Value, 0),
    I(hs_rdmsr, kGP | kNone, Value, 0), I(hs_wrmsr, kGP, Value, 0), I(hs_rdpmc, kGP | kNone, Value, 0),
    I(hs_xsetbv, kGP | kUD, Value, 0), I(hs_monitor, kUD | kGP, Value, 0), I(hs_mwait, kUD | kGP, None, 0),
    // Ports: none is open to ring 3; 0xf4 would end QEMU.
    I(hs_inb_dx, kGP, Port, 0), I(hs_inw_dx, kGP, Port, 0), I(hs_inl_dx, kGP, Port, 0),
    I(hs_outb_dx, kGP, Port, 0), I(hs_outw_dx, kGP, Port, 0), I(hs_outl_dx, kGP, Port, 0),
    I(hs_inb_80, kGP, None, 0), I(hs_outb_f4, kGP, None, 0), I(hs_outl_f4, kGP, None, 0),
    I(hs_insb, kGP, Port, 0), I(hs_rep_outsb, kGP, Port, 0),
    // Allowed or not, as the CPU's UMIP, FSGSBASE, OSFXSR, XSAVE settings say.
    I(hs_sldt, kGP | kNone, None, 0), I(hs_str, kGP | kNone, None, 0), I(hs_smsw, kGP | kNone, None, 0),
    I(hs_rdtscp, kUD | kNone, None, 0), I(hs_xgetbv, kUD | kNone, None, 0), I(hs_cpuid, kNone, Cpuid, 0),
    I(hs_wrgsbase, kUD | kGP | kNone, Value, 0), I(hs_wrfsbase, kUD | kGP | kNone, Value, 0),
    I(hs_rdgsbase, kUD | kNone, None, 0), I(hs_fninit, kUD | kNM | kNone, None, 0),
    I(hs_xorps, kUD | kNM | kNone, None, 0), I(hs_vxorps, kUD | kNM | kNone, None, 0),
    I(hs_lar, kNone, Selector, 0), I(hs_lsl, kNone, Selector, 0), I(hs_verr, kNone, Selector, 0),
    I(hs_verw, kNone, Selector, 0), I(hs_popf_iopl, kNone, None, 0),
    I(hs_div0, kDE, None, 0), I(hs_idiv_overflow, kDE, None, 0), I(hs_div8_overflow, kDE, None, 0),
    // Memory: what the address allows (memory_expect).
    I(hs_load1, 0, Load, 1), I(hs_load2, 0, Load, 2), I(hs_load4, 0, Load, 4), I(hs_load8, 0, Load, 8),
    I(hs_load16, kUD | kNM, Load, 16), I(hs_push_mem, 0, Load, 8), I(hs_clflush, kNone, Load, 1),
    I(hs_prefetch, kNone, Load, 0), I(hs_store1, 0, Store, 1), I(hs_store2, 0, Store, 2),
    I(hs_store4, 0, Store, 4), I(hs_store8, 0, Store, 8), I(hs_xchg8, 0, Store, 8), I(hs_cmpxchg8, 0, Store, 8),
    I(hs_cmpxchg16b, kGP, Store, 16), I(hs_rep_movsb, kNone | kPF | kGP, Copy, 0),
    I(hs_rep_movsb_back, kNone | kPF | kGP, Copy, 0), I(hs_rep_stosq, kNone | kPF | kGP, Fill, 0),
    I(hs_jmp, 0, Jump, 0), I(hs_call, 0, Jump, 0), I(hs_ret, 0, Jump, 0),
    I(hs_mov_ds, kNone | kGP | kNP, Selector, 0), I(hs_mov_es, kNone | kGP | kNP, Selector, 0),
    I(hs_mov_fs, kNone | kGP | kNP, Selector, 0), I(hs_mov_gs, kNone | kGP | kNP, Selector, 0),
    I(hs_mov_ss, kNone | kGP | kNP | kSS, Selector, 0), I(hs_ss_int3, kBP | kGP, None, 0),
};
#undef I

// An address and what touching it `size` bytes wide may raise; for #PF the
// range CR2 must fall in.
struct Addr {
    uint64_t va;
    uint32_t expect;
    uint64_t cr2_lo, cr2_hi;
};

Addr pool_a_addr(unsigned size)
{
    const uint64_t gp = pool_a(unsigned(rng.below(kRegionA - 1)));
    const uint64_t off = rng.below(kPage - (size ? size : 1) + 1);
    return Addr{g.va(gp) + off, kNone, 0, 0};
}

// The end of a run of pool A pages (a hole after it), or of memory.
uint64_t run_end()
{
    return rng.of({g.va(g.hole_b), g.va(g.hole_a), g.va(g.nr_pages)});
}

// A store to a playground table through its read-only mapping: the scratch
// L1 or a pool B frame. While the frame is an L1 table (the scratch L1
// unless a random request unlinked it; a pool B frame that random requests
// pinned or linked as one), an aligned 4- or 8-byte write of an entry the
// hypervisor accepts is emulated (Xen's writable page tables, docs/abi.md
// §12.5) and changes only the playground's mappings; anything else is the
// CPU's #PF. The invariant checks see every reference the emulation changed.
Addr playground_table_addr(unsigned n)
{
    const uint64_t gp = rng.below(2) ? g.scratch_l1 : g.pool_b + rng.below(kPoolB);
    const uint64_t va = g.va(gp) + (rng.below(4) ? rng.below(512) * 8 : rng.below(kPage - n + 1));
    return Addr{va, kPF | kNone, va, va + n - 1};
}

Addr memory_addr(bool store, unsigned size)
{
    const unsigned n = size ? size : 1;
    const unsigned pick = unsigned(rng.below(store ? 9 : 10));
    if (store && pick == 8) return playground_table_addr(n);
    switch (pick) {
    case 0: case 1: return pool_a_addr(size);
    case 2: {   // across a run's end into a hole: #PF at the first byte past it
        const uint64_t end = run_end();
        if (n == 1) return Addr{end, kPF, end, end};
        const uint64_t va = end - 1 - rng.below(n - 1);
        return Addr{va, kPF, end, end};
    }
    case 3: {   // read-only: the live tables, the code pages. A store goes to the L4, L3 or L2
                // (gpfns 0-2, the builder's order), never emulated: one to a live L1 might be,
                // and unmap the guest's own memory.
        const uint64_t tables = store ? (g.nr_pt < 3 ? g.nr_pt : 3) : g.nr_pt;
        const uint64_t va = rng.below(2) ? g.physmap + rng.below(tables) * kPage + rng.below(kPage / 16) * 16
                                          : kCodeVa + rng.below(2 * kPage - 16);
        return Addr{va, store ? kPF : kNone, va, va + n - 1};
    }
    case 4: {   // across the canonical boundary, from the code page's last bytes
        const uint64_t va = kLowerEnd - 1 - rng.below(n);
        // Across it: #GP, or #PF first for the page below when a store may
        // not write it (the order is the CPU's, or the emulator's).
        const bool crosses = va + n > kLowerEnd;
        return Addr{va, crosses ? kGP | (store ? kPF : 0) : store ? kPF : kNone, va, va + n - 1};
    }
    case 5: {   // unmapped, the hypervisor's, the empty upper half, past 2^64
        uint64_t va = pick_bad_va();
        if (va >= kLowerEnd && va < 0xffff800000000000ull) va = 0x100000000000ull + rng.below(1ull << 40);
        if (va >= kLowerEnd - 64 && va < kLowerEnd) va = 0x1000;
        // Slot 256 is the read-only M2P, where a load may work: slot 257's instead.
        if (!store && va >= 0xffff800000000000ull && va < 0xffff808000000000ull) va += 0x8000000000ull;
        return Addr{va, kPF, va, va + n - 1 < va ? ~0ull : va + n - 1};   // past 2^64: wraps
    }
    case 6: {   // non-canonical
        const uint64_t va = rng.below(2) ? kLowerEnd + rng.below(1ull << 46) : 0xffff7fffffffffffull - rng.below(1ull << 46);
        return Addr{va, kGP, 0, 0};
    }
    case 7: {   // the last bytes below the upper half: non-canonical
        const uint64_t va = 0xffff800000000000ull - n - rng.below(64);
        return Addr{va, kGP, 0, 0};
    }
    default: {  // the playground (loads only): mapped or not, as random requests left it
        const uint64_t va = kSlot255 + rng.below(kCodeRegion - kSlot255 - 16);
        return Addr{va, kNone | kPF, va, va + n - 1};
    }
    }
}

Addr jump_addr()
{
    uint64_t va = pick_bad_va();
    if (va >= kLowerEnd && va < 0xffff800000000000ull) return Addr{va, kGP, 0, 0};   // at the jump itself
    if (va >= kLowerEnd - 64 && va < kLowerEnd) va = 0x1000;
    return Addr{va, kPF, va, va};
}

uint64_t pick_selector()
{
    switch (rng.below(6)) {
    case 0: return rng.of({0ull, 3ull, uint64_t(FLAT_RING3_SS64), uint64_t(FLAT_RING3_CS64), 0xe023ull, 0xe010ull});
    case 1: case 2: return (1 + rng.below(16)) * 8 + rng.below(4);   // the guest's own set_gdt entries
    case 3: return (FIRST_RESERVED_GDT_ENTRY - 1 - rng.below(4)) * 8 + 3;
    case 4:   // the LDT (none, or one SET_LDT took): its first entries (setup.cc's LDT page) or any
        return rng.below(2) ? (rng.below(1ull << 16) | 4) : rng.below(8) * 8 + 4 + rng.below(4);
    default: return rng.below(1ull << 16);
    }
}

const char* vector_list(uint32_t m, char* buf)
{
    unsigned n = 0;
    for (unsigned v = 0; v < 32; ++v)
        if (m & (1u << v)) {
            if (n) buf[n++] = ',';
            if (v >= 10) buf[n++] = char('0' + v / 10);
            buf[n++] = char('0' + v % 10);
        }
    buf[n] = 0;
    return buf;
}

// `rmw`: a locked read-modify-write, whose #PF may say read or write (an
// emulator may report the read half).
void judge(const char* what, const ProbeResult& r, uint32_t expect, const Addr* a, bool store, bool fetch,
           bool rmw = false)
{
    char want[100], got[100];
    if (!r.traps) {
        if (!(expect & kNone)) fail("%s: expected an exception (%s), got none", what, vector_list(expect, want));
        return;
    }
    if (r.vectors & ~expect)
        fail("%s: exception %s (first %u, error 0x%lx, rip 0x%lx, cr2 0x%lx), expected %s%s", what, vector_list(r.vectors, got),
             r.vector, r.error, r.rip, r.cr2, vector_list(expect, want), expect & kNone ? " or none" : "");
    if (r.vector == 14 && a && a->cr2_hi) {
        // Page-fault error code: P 0, W/R 1, U/S 2, RSVD 3, I/D 4 ("Page-Fault Exceptions").
        if (r.cr2 < a->cr2_lo || r.cr2 > a->cr2_hi)
            fail("%s: #PF at cr2 0x%lx, expected 0x%lx..0x%lx", what, r.cr2, a->cr2_lo, a->cr2_hi);
        // U/S clear: Xen's report of a fault in the guest's kernel mode.
        if ((r.error & 4) || (r.error & 8) || (!fetch && !rmw && bool(r.error & 2) != store))
            fail("%s: #PF error code 0x%lx (user %lu, write %lu expected)", what, r.error, uint64_t(0), uint64_t(store));
    }
    if (r.vector == 13 && a && (a->expect & kGP) && r.error != 0)
        fail("%s: #GP error code 0x%lx for a non-canonical address, expected 0", what, r.error);
}

// `user`: run in guest user mode (user.cc), where nothing is emulated and
// the user L4 may be another: any exception may come, user_probe checks
// how it arrived.
void run_insn(const Insn& in, bool user = false)
{
    uint64_t a[4] = {rng.next(), rng.next(), rng.next(), rng.next()};
    uint32_t expect = in.expect;
    Addr addr{};
    bool store = false, fetch = false, with_addr = false;
    switch (in.arg) {
    case Arg::None: break;
    case Arg::Value:   // an address or a value: privileged before anything else
        a[0] = rng.below(2) ? pick_any_va() : rng.next();
        if (in.fn == hs_rdmsr || in.fn == hs_wrmsr)
            a[0] = rng.of({0xc0000080ull, 0xc0000081ull, 0xc0000082ull, 0xc0000084ull, 0xc0000100ull, 0xc0000101ull, 0xc0000102ull, 0x1bull, 0x10ull, 0x174ull, rng.next()});
        // Never Xen's hypercall-page MSR: it would write a page over a frame of the guest's own.
        if (in.fn == hs_wrmsr && uint32_t(a[0]) == 0x40000000) a[0] ^= 1;
        // The %fs/%gs bases (set_segment_base's rules): an address the guest
        // may name is taken, anything else (non-canonical, the hypervisor's
        // slots) is #GP. EDX:EAX is a[2]:a[1].
        if (in.fn == hs_wrmsr && uint32_t(a[0]) >= 0xc0000100 && uint32_t(a[0]) <= 0xc0000102) {
            if (rng.below(2)) a[1] = pick_any_va(), a[2] = a[1] >> 32;
            const uint64_t base = uint64_t(uint32_t(a[2])) << 32 | uint32_t(a[1]);
            expect = base < 0x0000800000000000 || base >= 0xffff880000000000 ? kNone : kGP;
        }
        if (in.fn == hs_lgdt || in.fn == hs_lidt) a[0] = pick_pointer(10);
        if (in.fn == hs_monitor) a[0] = pool_a_addr(1).va;
        // Debug registers (set_debugreg's rules, pv/dr.h): DR0 takes a
        // guest address, DR7 32 bits. No breakpoint is ever enabled (the
        // guest's own accesses would raise #DB anywhere), so DR7 never gets
        // an L or G bit; DR0 may hold anything then.
        if (in.fn == hs_wr_dr0) expect = a[0] < 0x0000800000000000 || a[0] >= 0xffff880000000000 ? kNone : kGP;
        if (in.fn == hs_wr_dr7) {
            a[0] &= ~0xffull;
            expect = a[0] >> 32 ? kGP : kNone;
        }
        break;
    case Arg::Port: a[2] = rng.of({0x80ull, 0xf4ull, 0x3f8ull, 0x3fdull, 0x64ull, 0xcf8ull, 0xcfcull, rng.below(1ull << 16)});
        a[0] = pool_a_addr(1).va;   // INS's destination, OUTS's source
        a[1] = pool_a_addr(1).va;
        break;
    case Arg::Selector: a[0] = pick_selector(); break;
    case Arg::Cpuid: a[0] = rng.of({0ull, 1ull, 7ull, 0xdull, 0x80000001ull, 0x40000000ull, rng.next()}); break;
    case Arg::Load: case Arg::Store:
        store = in.arg == Arg::Store;
        addr = memory_addr(store, in.size);
        if (in.fn == hs_prefetch) addr.expect = kNone;   // never faults
        if (in.fn == hs_cmpxchg16b && rng.below(2)) {   // aligned (else #GP), which may move it
            addr = Addr{addr.va & ~15ull, kNone | kPF | kGP, 0, 0};
            store = false;
        }
        a[0] = addr.va;
        with_addr = true;
        expect |= addr.expect;
        break;
    case Arg::Jump:
        addr = jump_addr();
        a[0] = addr.va;
        expect |= addr.expect;
        with_addr = fetch = true;
        break;
    case Arg::Copy: {   // to pool A, from anywhere readable or not, across run ends
        // The destination starts in pool A and runs, up or (backwards) down,
        // into a hole or a read-only page: #PF. (It once started n bytes
        // past a pool A address: over hole A into the text page.)
        const uint64_t n = rng.below(3) ? rng.below(256) : rng.below(8192);
        a[0] = pool_a_addr(1).va;
        a[1] = rng.below(2) ? pool_a_addr(1).va : memory_addr(false, 1).va;
        a[2] = n;
        break;
    }
    case Arg::Fill:
        a[0] = pool_a_addr(8).va & ~7ull;
        a[2] = rng.below(3) ? rng.below(64) : rng.below(1024);
        break;
    }
    note(in.name, a[0], a[1], a[2], a[3], user);
    if (user) {
        const ProbeResult r = user_probe(in.fn, in.at, in.past, a);
        noted_result(r.traps ? -int64_t(r.vector) - 1000 : 0);
        judge(in.name, r, kNone | kDE | kDB | kBP | kOF | kUD | kNM | kNP | kSS | kGP | kPF | V(17), nullptr, false,
              false);
        return;
    }
    const ProbeResult r = probe(in.fn, in.at, in.past, a[0], a[1], a[2], a[3]);
    noted_result(r.traps ? -int64_t(r.vector) - 1000 : 0);
    const bool rmw = in.fn == hs_xchg8 || in.fn == hs_cmpxchg8 || in.fn == hs_cmpxchg16b;
    judge(in.name, r, expect, with_addr ? &addr : nullptr, store, fetch, rmw);
    if (in.fn == hs_popf_iopl && ((r.rax & 0x3000) || !(r.rax & 0x200)) && !r.traps)
        fail("POPF in ring 3 changed IF or IOPL: RFLAGS 0x%lx", r.rax);
}

void run_int_n()
{
    const unsigned n = unsigned(rng.below(256));
    const char* at = hostile_int_n + 4 * n;
    note("int $n", n);
    const ProbeResult r = probe(at, at, at + 2);
    noted_result(r.traps ? -int64_t(r.vector) - 1000 : 0);
    // The gates of #BP and #OF have DPL 3; any other INT n reaches the
    // guest's handler of vector n when its entry's DPL is above 0 (Xen's
    // rule for a PV kernel: no error code, RIP past the instruction), and
    // INT $0x80 whenever it has one (Xen's int80 gate), else it is a #GP
    // naming the IDT gate (n * 8 + 2, n * 16 + 2 under TCG). The entries
    // above 31 are DPL 0, on vector 0's stub.
    uint32_t expect = kGP;
    if (n == 3) expect = kBP;
    else if (n == 4) expect = kOF;
    else if (trap_dpl(n) > 0) expect = V(n);
    else if (n == 0x80 && trap_extra(n)) expect = V(0);
    judge("int $n", r, expect, nullptr, false, false);
    if (r.traps && r.vector == 13 && r.error != n * 8 + 2 && r.error != n * 16 + 2)
        fail("int $%u: #GP error code 0x%lx, expected the IDT gate 0x%x", n, r.error, n * 8 + 2);
    if (r.traps && expect != kGP && r.vector != 13 && r.rip != uint64_t(at + 2))
        fail("int $%u: delivered with rip 0x%lx, expected 0x%lx (past it)", n, r.rip, uint64_t(at + 2));
}

// A far return and an IRETQ of the guest's own, to its resume point or not.
void run_far()
{
    const bool iret = rng.below(2);
    const uint64_t target = rng.below(3) ? uint64_t(hostile_probe_resume) : jump_addr().va;
    uint64_t cs = rng.below(2) ? FLAT_RING3_CS64 : pick_selector();
    const uint64_t ss = rng.below(2) ? FLAT_RING3_SS64 : pick_selector();
    // Flags ring 3 may set and IOPL, which IRETQ ignores there (not NT, which
    // it may set: a later IRET would then #GP, and probe() checks NT is off).
    const uint64_t flags = rng.next() & (0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800 | 0x200000 | 0x3000);
    note(iret ? "iretq" : "lretq", target, cs, ss, flags);
    const ProbeResult r = iret ? probe(hs_iretq, hs_iretq_f, hs_iretq_e, target, cs, ss, flags)
                               : probe(hs_lret, hs_lret_f, hs_lret_e, target, cs);
    noted_result(r.traps ? -int64_t(r.vector) - 1000 : 0);
    judge(iret ? "iretq" : "lretq", r, kNone | kGP | kNP | kSS | kPF, nullptr, false, true);
}

// TF on for `steps` #DBs from the instruction after the POPF: 9 or more
// reach the SYSCALL (the MOV SS too, in the shadow variant).
void run_tf_syscall()
{
    const Call c = make_call(true);
    load_raw(c);
    const unsigned steps = 1 + unsigned(rng.below(16));
    const bool shadow = rng.below(2);
    const char* what = shadow ? "single-stepped SYSCALL in a MOV SS shadow" : "single-stepped SYSCALL";
    note(what, c.nr, c.a[0], c.a[1], c.a[2], steps);
    const ProbeResult r = shadow ? probe(hs_tf_ss_syscall, hs_tf_ss_syscall_f, hs_tf_ss_syscall_e, 0, 0, 0, 0, steps)
                                 : probe(hs_tf_syscall, hs_tf_syscall_f, hs_tf_syscall_e, 0, 0, 0, 0, steps);
    noted_result(r.traps);
    judge(what, r, kDB, nullptr, false, false);
    result_lost();
}

void run_ss_syscall()
{
    const Call c = make_call(true);
    load_raw(c);
    note("SYSCALL in a MOV SS shadow", c.nr, c.a[0], c.a[1], c.a[2]);
    const ProbeResult r = probe(hs_ss_syscall, hs_ss_syscall_f, hs_ss_syscall_e);
    noted_result(int64_t(r.rax));
    judge("SYSCALL in a MOV SS shadow", r, kNone, nullptr, false, false);
    check_result(c, int64_t(r.rax));
}

// Where a SYSCALL of the guest's sits: the two bytes and what follows them.
struct Boundary {
    uint64_t va;
    uint32_t expect;
    uint64_t cr2;
    const char* what;
};

Boundary pick_boundary()
{
    uint8_t* b = g_code_b;   // two pages, then a hole
    const uint64_t hole = uint64_t(g_code_b) + 2 * kPage;
    switch (rng.below(opt.edges ? 5 : 4)) {
    case 0:   // the last 2 bytes of a page, a RET on the next: comes back
        return Boundary{kCodeVa + kPage - 2, kNone, 0, "SYSCALL in a page's last bytes"};
    case 1:   // straddling two mapped pages
        b[kPage - 1] = 0x0f, b[kPage] = 0x05, b[kPage + 1] = 0xc3;
        return Boundary{uint64_t(b) + kPage - 1, kNone, 0, "SYSCALL across a page boundary"};
    case 2:   // straddling into a hole: the fetch faults past the page
        b[2 * kPage - 1] = 0x0f;
        return Boundary{hole - 1, kPF, hole, "SYSCALL across into a hole"};
    case 3:   // the last 2 bytes before a hole: comes back to a fetch fault
        b[2 * kPage - 2] = 0x0f, b[2 * kPage - 1] = 0x05;
        return Boundary{hole - 2, kPF, hole, "SYSCALL before a hole"};
    default:  // the last 2 bytes of the lower half: RCX comes back non-canonical
        return Boundary{kLowerEnd - 2, kGP | kPF, 0, "SYSCALL at the canonical boundary"};
    }
}

} // namespace

void op_instruction()
{
    const uint64_t r = rng.below(100);
    if (r < 82) run_insn(kInsns[rng.below(sizeof(kInsns) / sizeof(kInsns[0]))]);
    else if (r < 90) run_int_n();
    else if (r < 95) run_far();
    else if (r < 98) run_tf_syscall();
    else run_ss_syscall();
}

void op_user_instruction() { run_insn(kInsns[rng.below(sizeof(kInsns) / sizeof(kInsns[0]))], true); }

void op_boundary_syscall()
{
    const Boundary b = pick_boundary();
    const Call c = make_call(true);
    load_raw(c);
    note(b.what, b.va, c.nr, c.a[0], c.a[1], c.a[2]);
    const ProbeResult r = probe(hs_boundary, hs_boundary_f, hs_boundary_e, b.va);
    noted_result(r.traps ? -int64_t(r.vector) - 1000 : int64_t(r.rax));
    const Addr a{b.va, b.expect, b.cr2, b.cr2};
    judge(b.what, r, b.expect, b.cr2 ? &a : nullptr, false, true);
    if (r.traps) result_lost();
    else check_result(c, int64_t(r.rax));
}

// The iret hypercall with a frame of random RFLAGS (the hypervisor keeps IF
// on, IOPL and NT off) and selector RPLs, back to the resume point, or to a
// SYSCALL at a boundary with RAX and the arguments of a random call.
void op_iret()
{
    uint64_t flags = rng.next();
    if (!rng.one_in(8)) flags &= ~0x100ull;   // TF: a #DB after the first instruction
    const uint64_t cs = (FLAT_RING3_CS64 & ~3u) | rng.below(3), ss = (FLAT_RING3_SS64 & ~3u) | rng.below(4);
    uint64_t rip = uint64_t(hostile_probe_resume);
    uint32_t expect = kNone;
    Boundary b{};
    if (rng.one_in(4)) {
        b = pick_boundary();
        rip = b.va;
        expect = b.expect;
    }
    const Call c = make_call(true);
    load_raw(c);
    note("iret", rip, flags, cs, ss, c.nr);
    const ProbeResult r = probe(hs_iret_hypercall, hs_iret_hypercall_f, hs_iret_hypercall_e, flags, cs, ss, rip);
    noted_result(r.traps);
    if (flags & 0x100) expect |= kDB;
    const Addr a{rip, expect, b.cr2, b.cr2};
    judge("iret", r, expect, b.cr2 ? &a : nullptr, false, true);
    if (rip == uint64_t(hostile_probe_resume)) result_lost();   // the call was never made
    else if (r.traps) result_lost();
    else check_result(c, int64_t(r.rax));
}

} // namespace hostile
