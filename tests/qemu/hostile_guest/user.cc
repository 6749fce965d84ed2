// The hostile guest's user mode (docs/security.md §7.10; docs/abi.md §10
// "Guest user mode"): random instructions of instructions.cc run in guest
// user mode, on a user L4 of the guest's own that shares the kernel's
// tables (its image page, out of reach of random requests) or on the live
// L4 named as the user one; or a user L4 drawn at random (a pool B frame
// the hypervisor validates as one, with random entries), entered at an
// address it does not map. Random NEW_USER_BASEPTR, stack_switch and
// callback calls (hypercalls.cc) change what the next user probe would run
// on, so each probe names its own first. Every entry from user mode must
// arrive in kernel mode on the kernel stack: the syscall callback's frame at
// its top, an exception's frame with CS RPL 3 (and a #PF's U/S bit set)
// inside it.
#include "hostile.h"

extern "C" {
HIDDEN extern char hostile_user_enter[], hostile_user_exit[], hostile_user_syscall[];
HIDDEN extern uint64_t hostile_user_args[4], hostile_user_cb_rsp;
}

namespace hostile {

namespace {

alignas(4096) uint64_t g_user_l4[512];   // image, .bss: no random request names it
alignas(4096) uint8_t g_kstack[2 * kPage];
alignas(16) uint8_t g_ustack[kPage];

uint64_t ktop() { return uint64_t(g_kstack) + sizeof(g_kstack); }

uint64_t image_mfn(const void* p) { return g.mfn((uint64_t(p) - g.physmap) / kPage); }

long mmuext(unsigned cmd, uint64_t mfn)
{
    mmuext_op_t op{};
    op.cmd = cmd;
    op.arg1.mfn = mfn;
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

void must(const char* what, long rc)
{
    if (rc != 0) fail("user mode: %s: %ld", what, rc);
}

// Whether va is mapped by the L4 of machine frame l4, read through the
// physmap (frames of the guest's own that it maps: never a hole); -1 when
// the walk reaches a frame it cannot read.
int mapped(uint64_t l4, uint64_t va)
{
    const uint64_t hole_c = (uint64_t(g_code_b) + 2 * kPage - g.physmap) / kPage;
    uint64_t m = l4;
    for (int shift = 39; shift >= 12; shift -= 9) {
        if (!g.own(m)) return -1;
        const uint64_t gp = m - g.first_mfn;
        if (gp == g.hole_a || gp == g.hole_b || gp == hole_c) return -1;
        const uint64_t e = reinterpret_cast<const uint64_t*>(g.va(gp))[(va >> shift) & 511];
        if (!(e & pte::P)) return 0;
        if (shift == 12 || (e & pte::PS)) return 1;
        m = (e & pte::ADDR) / kPage;
    }
    return 1;
}

// A random L4 as the user one: a user probe at an address it does not map,
// whose fetch must come back as a #PF of user mode (U/S and I/D set) at that
// address, on the kernel stack. Nothing runs in user mode: the tables are
// random. False when the draw is refused or no such address turns up.
bool hostile_l4_probe()
{
    const uint64_t l4 = pick_mfn(Use::UserBaseptr);
    if (mmuext(MMUEXT_NEW_USER_BASEPTR, l4) != 0) return false;
    uint64_t va = 0;
    for (unsigned i = 0; i < 8 && !va; ++i) {
        const uint64_t at = (rng.below(2) ? kSlot255 + rng.below(1ull << 39) : rng.below(kLowerEnd)) & ~15ull;
        if (at >= kPage && mapped(l4, at) == 0) va = at;
    }
    if (!va) return false;
    note("user mode on a random L4", l4, va);
    const uint64_t rsp = uint64_t(g_ustack) + sizeof(g_ustack) - 8;
    const char* safe = hostile_user_exit;   // probe() reads the byte at `past`
    const ProbeResult r = probe(hostile_user_enter, safe, safe, va, rsp, 0x202, 0);
    noted_result(r.traps ? -int64_t(r.vector) - 1000 : 0);
    if (r.traps == 0 || r.vector != 14 || r.cr2 != va || (r.error & 0x1d) != 0x14)
        fail("user mode on L4 0x%lx at 0x%lx: vector %u (%u traps), error 0x%lx, cr2 0x%lx; expected a user fetch #PF there", l4,
             va, r.vector, r.traps, r.error, r.cr2);
    if (r.frame < uint64_t(g_kstack) || r.frame >= ktop() || (r.cs & 3) != 3)
        fail("user mode on L4 0x%lx: the #PF's handler on 0x%lx, CS 0x%lx", l4, r.frame, r.cs);
    return true;
}

} // namespace

// SYSCALL in user mode while no syscall callback is registered
// (set_callbacks with 0): a #UD at the SYSCALL, from user mode, on the
// kernel stack, as Xen 4.17 bounces it; never the domain's end. The
// syscall of hostile_user_exit, past its 5-byte MOV, is the one run.
void user_no_callback_check()
{
    must("stack_switch", hypercall(__HYPERVISOR_stack_switch, FLAT_RING3_SS64, ktop()));
    must("set_callbacks(0, 0, 0)", hypercall(__HYPERVISOR_set_callbacks, 0, 0, 0));
    must("MMUEXT_NEW_USER_BASEPTR", mmuext(MMUEXT_NEW_USER_BASEPTR, image_mfn(g_user_l4)));
    const uint64_t rsp = uint64_t(g_ustack) + sizeof(g_ustack) - 8;
    const char* exit = hostile_user_exit;
    const ProbeResult r = probe(hostile_user_enter, exit, exit, uint64_t(exit), rsp, 0x202, 0);
    const uint64_t at = uint64_t(exit) + 5;
    if (r.traps == 0 || r.vector != 6 || r.rip != at || (r.cs & 3) != 3 || r.frame < uint64_t(g_kstack) ||
        r.frame >= ktop())
        fail("user mode: SYSCALL without a syscall callback: vector %u (%u traps) at 0x%lx, CS 0x%lx, handler on 0x%lx; "
             "expected a #UD at 0x%lx from user mode on the kernel stack", r.vector, r.traps, r.rip, r.cs, r.frame, at);
}

// The user L4: the live L4's guest entries (the hypervisor fills its own
// slots at validation), read-only in the physmap, pinned. Before the
// protected tables are hashed: the read-only mapping changes a live L1.
void user_setup()
{
    const auto* live = reinterpret_cast<const uint64_t*>(g.va(0));
    for (unsigned i = 0; i < 512; ++i) g_user_l4[i] = i >= 256 && i < 272 ? 0 : live[i];
    must("its L4 read-only", hypercall(__HYPERVISOR_update_va_mapping, uint64_t(g_user_l4),
                                       image_mfn(g_user_l4) * kPage | pte::P | pte::US | pte::A,
                                       UVMF_INVLPG | UVMF_LOCAL));
    must("MMUEXT_PIN_L4_TABLE of its L4", mmuext(MMUEXT_PIN_L4_TABLE, image_mfn(g_user_l4)));
}

ProbeResult user_probe(const char* fn, const char* at, const char* past, const uint64_t (&a)[4])
{
    // What random calls may have changed since the last user probe.
    must("stack_switch", hypercall(__HYPERVISOR_stack_switch, FLAT_RING3_SS64, ktop()));
    callback_register_t cb{CALLBACKTYPE_syscall, uint16_t(rng.below(2) ? CALLBACKF_mask_events : 0),
                           uint64_t(hostile_user_syscall)};
    must("CALLBACKOP_register syscall", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)));
    if (rng.one_in(4) && hostile_l4_probe()) return ProbeResult{};
    const bool own = rng.below(2);
    must("MMUEXT_NEW_USER_BASEPTR", mmuext(MMUEXT_NEW_USER_BASEPTR, own ? image_mfn(g_user_l4) : g.mfn(0)));
    for (unsigned i = 0; i < 4; ++i) hostile_user_args[i] = a[i];
    // The snippet's RET goes to hostile_user_exit, at the stack's top.
    const uint64_t rsp = uint64_t(g_ustack) + sizeof(g_ustack) - 8;
    *reinterpret_cast<uint64_t*>(rsp) = uint64_t(hostile_user_exit);
    hostile_user_cb_rsp = 0;
    const ProbeResult r = probe(hostile_user_enter, at, past, uint64_t(fn), rsp, 0x202, 0);
    if (!r.traps) {
        // Back by SYSCALL: its frame (RCX, R11, RIP, CS, RFLAGS, RSP, SS) at the kernel stack's top.
        if (hostile_user_cb_rsp && hostile_user_cb_rsp != ktop() - 56)
            fail("user mode: the syscall callback's frame at 0x%lx, expected 0x%lx", hostile_user_cb_rsp, ktop() - 56);
        return r;
    }
    if (r.frame < uint64_t(g_kstack) || r.frame >= ktop())
        fail("user mode: exception %u's handler ran on 0x%lx, not the kernel stack 0x%lx", r.vector, r.frame, ktop());
    if ((r.cs & 3) != 3) fail("user mode: exception %u's frame has CS 0x%lx (kernel context)", r.vector, r.cs);
    if (r.vector == 14 && !(r.error & 4))
        fail("user mode: #PF error code 0x%lx without U/S (cr2 0x%lx)", r.error, r.cr2);
    return r;
}

} // namespace hostile
