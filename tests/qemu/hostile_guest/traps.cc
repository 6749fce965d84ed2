// The hostile guest's exception handling (docs/security.md §7.10): the trap
// table it installs, with a handler of a random variant for every vector
// (traps.S), and the probe that runs one snippet of instructions.cc, whatever it
// raises. A handler records the trap and comes back in one of three ways:
// the iret hypercall to the probe's resume point (with random RFLAGS bits
// and selector RPLs the hypervisor must mask), a jump there without the
// hypervisor, or the iret hypercall to the instruction after the faulting
// one. #DB of a single-step probe continues in place.
#include "hostile.h"

extern "C" {
HIDDEN extern char hostile_trap_stubs[];
HIDDEN extern uint8_t hostile_drop_error;
HIDDEN extern uint64_t hostile_resume_rsp;
HIDDEN void hostile_iret_raw();
HIDDEN uint64_t hostile_probe(const void* fn, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3);
}

namespace hostile {

namespace {

// What hostile_trap_common leaves on the stack: its pushes, the stub's, then
// the bounce frame (docs/abi.md §10 "Exceptions").
struct TrapRegs {
    uint64_t r15, r14, r13, r12, r10, r9, r8, rbp, rdi, rsi, rdx, rbx, rax;
    uint64_t variant, vector;
    uint64_t rcx, r11;
    uint64_t rest[6];   // [error code], RIP, CS, RFLAGS, RSP, SS
};

constexpr uint64_t kTF = 0x100, kIF = 0x200, kIOPL = 0x3000, kNT = 0x4000;
constexpr uint16_t kFlatCs = FLAT_RING3_CS64, kFlatSs = FLAT_RING3_SS64;

bool has_error_code(unsigned v) { return v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 || v == 29 || v == 30; }

bool g_known = false;   // the hypervisor holds the table install_traps set
uint8_t g_dpl[32];      // the DPL install_traps gave each exception vector
bool g_extra[256];      // the vectors above 31 it gave a DPL-0 entry (vector 0's stub)

struct Active {
    bool on = false, in_handler = false, may_skip = false, single_step = false;
    uint64_t at = 0, past = 0;
    unsigned steps = 0;
    ProbeResult r;
};
Active g_p;

uint16_t g_ds, g_es, g_fs, g_gs;
bool g_segments_saved = false;

} // namespace

void install_traps()
{
    if (!g_segments_saved) {
        asm volatile("mov %%ds, %0; mov %%es, %1; mov %%fs, %2; mov %%gs, %3"
                     : "=r"(g_ds), "=r"(g_es), "=r"(g_fs), "=r"(g_gs));
        g_segments_saved = true;
    }
    trap_info_t t[32 + 4 + 1];
    unsigned order[32];
    for (unsigned i = 0; i < 32; ++i) order[i] = i;
    for (unsigned i = 31; i > 0; --i) {   // in a random order
        const unsigned j = unsigned(rng.below(i + 1));
        const unsigned x = order[i];
        order[i] = order[j], order[j] = x;
    }
    unsigned n = 0;
    // A DPL above 0 lets INT n reach the handler (a PV kernel's rule), with
    // no error code: so 0 for the vectors whose handler reads one.
    for (unsigned v : order) {
        g_dpl[v] = has_error_code(v) ? 0 : uint8_t(rng.below(4));
        t[n++] = trap_info_t{uint8_t(v), uint8_t(g_dpl[v] | (rng.below(2) << 2)), kFlatCs,
                             uint64_t(hostile_trap_stubs) + 16 * (32 * rng.below(3) + v)};
    }
    // DPL 0: INT n of them stays a #GP, but INT $0x80 (Xen's int80 gate).
    for (bool& e : g_extra) e = false;
    for (unsigned k = unsigned(rng.below(4)); k; --k) {
        const uint8_t v = uint8_t(32 + rng.below(224));
        g_extra[v] = true;
        t[n++] = trap_info_t{v, 0, kFlatCs, uint64_t(hostile_trap_stubs)};
    }
    t[n] = trap_info_t{0, 0, 0, 0};
    // Entries merge per vector: NULL first clears what earlier random tables left.
    long rc = hypercall(__HYPERVISOR_set_trap_table, 0);
    if (rc != 0) fail("set_trap_table(NULL): %ld", rc);
    rc = hypercall(__HYPERVISOR_set_trap_table, uint64_t(t));
    if (rc != 0) fail("set_trap_table of a full table: %ld", rc);
    g_known = true;
}

void traps_unknown() { g_known = false; }

unsigned trap_dpl(unsigned vector) { return vector < 32 ? g_dpl[vector] : 0; }

bool trap_extra(unsigned vector) { return vector < 256 && g_extra[vector]; }

void restore_segments()
{
    const uint16_t ss = kFlatSs;
    asm volatile("mov %0, %%ds; mov %1, %%es; mov %2, %%fs; mov %3, %%gs; mov %4, %%ss"
                 : : "r"(g_ds), "r"(g_es), "r"(g_fs), "r"(g_gs), "r"(ss) : "memory");
}

ProbeResult probe(const void* fn, const char* at, const char* past, uint64_t a0, uint64_t a1, uint64_t a2,
                  uint64_t a3, unsigned tf_steps)
{
    if (!g_known) install_traps();
    hostile_iret_via = rng.below(2) ? uint64_t(hypercall_page + __HYPERVISOR_iret * 32) : uint64_t(&hostile_iret_raw);
    g_p = Active{};
    g_p.on = true;
    g_p.at = uint64_t(at), g_p.past = uint64_t(past);
    // Skipping is for snippets whose instruction is followed by their return.
    g_p.may_skip = *reinterpret_cast<const uint8_t*>(past) == 0xc3;
    g_p.single_step = tf_steps != 0;
    g_p.steps = tf_steps;
    ++stats.probes;
    const uint64_t rax = hostile_probe(fn, a0, a1, a2, a3);
    g_p.on = false;
    restore_segments();
    uint64_t fl;
    asm volatile("pushfq; pop %0" : "=r"(fl));
    if (!(fl & kIF) || (fl & (kIOPL | kNT)))
        fail("RFLAGS 0x%lx after a probe: IF off, IOPL or NT on in ring 3", fl);
    ProbeResult r = g_p.r;
    r.rax = rax;
    return r;
}

} // namespace hostile

using namespace hostile;

extern "C" HIDDEN int hostile_trap(TrapRegs* t);

// 0: leave by the iret hypercall with the (edited) frame; 1: jump to the
// probe's resume point.
extern "C" int hostile_trap(TrapRegs* t)
{
    const unsigned v = unsigned(t->vector);
    const bool err = has_error_code(v);
    hostile_drop_error = err;
    uint64_t* f = &t->rest[err ? 1 : 0];
    uint64_t &rip = f[0], &cs = f[1], &rflags = f[2], &rsp = f[3], &ss = f[4];
    ++stats.traps;
    if (v < 32) ++stats.by_vector[v];
    if (v >= 32 || !g_p.on || g_p.in_handler)
        fail("unexpected exception %u (error 0x%lx) at 0x%lx, rsp 0x%lx, outside a probe", v, err ? t->rest[0] : 0, rip, rsp);
    g_p.in_handler = true;
    ProbeResult& r = g_p.r;
    if (r.traps++ == 0) {
        r.vector = v;
        r.error = err ? t->rest[0] : 0;
        r.rip = rip;
        r.cr2 = v == 14 ? g.shared->vcpu_info[0].arch.cr2 : 0;
        r.cs = cs;
        r.frame = uint64_t(t);
    }
    r.vectors |= 1u << v;
    if (r.traps > 200) fail("a probe took 200 exceptions (last %u at 0x%lx): a loop", v, rip);
    // The selectors iret accepts: the flat ones, any RPL (ring 3 is forced);
    // CS RPL 0-2, kernel mode (RPL 3 enters user mode, which needs a user L4).
    cs = (kFlatCs & ~3u) | rng.below(3);
    ss = (kFlatSs & ~3u) | rng.below(4);
    if (v == 1 && g_p.single_step) {   // continue in place, TF on for a few more steps
        if (g_p.steps) --g_p.steps;
        else rflags &= ~kTF;
        g_p.in_handler = false;
        return 0;
    }
    rflags &= ~kTF;
    // Bits the guest may change, and bits the hypervisor must take no matter
    // what: IF off, IOPL, NT (probe() checks them afterwards).
    rflags ^= rng.next() & (0x1 | 0x4 | 0x10 | 0x40 | 0x80 | 0x800 | 0x200000);
    if (rng.one_in(8)) rflags &= ~kIF;
    if (rng.one_in(8)) rflags |= kIOPL | kNT | (rng.below(2) ? 0x10000 | 0x20000 | 0x80000 | 0x100000 : 0);
    g_p.in_handler = false;
    switch (t->variant) {
    case 1: return 1;
    case 2:
        // A fault leaves RIP at the instruction, a trap past it.
        if (g_p.may_skip && (rip == g_p.at || rip == g_p.past)) {
            rip = g_p.past;
            return 0;
        }
        [[fallthrough]];
    default:
        rip = uint64_t(hostile_probe_resume);
        rsp = hostile_resume_rsp;
        return 0;
    }
}
