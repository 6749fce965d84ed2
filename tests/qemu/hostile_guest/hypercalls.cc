// The hostile guest's random hypercalls (docs/security.md §7.10): every number
// pvmmu implements, with random and boundary arguments (args.cc), and numbers
// it does not, which must all be -ENOSYS. Excluded, because they would end the
// guest legitimately: a shutdown with a valid reason, VCPUOP_down of itself,
// VCPUOP_up of a vCPU initialised with anything but the guest's own safe start,
// PVMMUOP_deny of a real command (denials are never lifted), the iret
// hypercall (op_iret makes it, with valid frames only).
#include "hostile.h"

#include <xen/memory.h>
#include <xen/physdev.h>

extern "C" HIDDEN char hostile_trap_stubs[], hostile_vcpu1_entry[];

// vCPU 1's whole life when the guest starts it: VCPUOP_down of itself. It
// needs no stack and no trap table; if the hypercall came back, ud2 would
// crash the domain and fail the run.
asm(R"(
    .pushsection .text
    .globl hostile_vcpu1_entry
    .hidden hostile_vcpu1_entry
hostile_vcpu1_entry:
    mov $24, %eax
    mov $2, %edi
    mov $1, %esi
    xor %edx, %edx
    syscall
    ud2
    .popsection
)");

namespace hostile {

namespace {

enum class After : uint8_t { Nothing, TrapsChanged, Vcpu1Init, Vcpu1Up };

struct Made {
    Call c;
    After after = After::Nothing;
    bool vcpu1_safe = false;
};

bool g_vcpu1_safe = false;   // vCPU 1 is initialised with the safe start

uint64_t pick_foreigndom()
{
    if (rng.below(4)) return DOMID_SELF;   // another needs MapForeign, which the guest lacks: -EPERM
    switch (rng.below(12)) {
    case 0: return 0;
    case 1: return g.facts.peer_domid;
    case 2: return DOMID_IO;
    case 3: return DOMID_XEN;
    case 4: return rng.below(1ull << 16);
    case 5: return DOMID_SELF | (rng.below(1ull << 16) << 16);
    case 6: return rng.next();
    default: return DOMID_SELF;
    }
}

uint64_t pick_pdone() { return rng.one_in(3) ? 0 : pick_pointer(4); }

uint64_t stub(unsigned vector) { return uint64_t(hostile_trap_stubs) + 16 * (32 * rng.below(3) + vector); }

mmu_update_t pick_request()
{
    mmu_update_t u{};
    unsigned level;
    const unsigned cmd = unsigned(rng.of({0ull, 0ull, 0ull, 2ull, 2ull, 2ull, 4ull, 4ull, 1ull, 3ull, 5ull, 6ull, 7ull}));
    switch (cmd) {
    case 1:   // machine-to-physical: any frame, any gpfn; bits 11:3 must be zero
        u.ptr = (pick_mfn(Use::Entry) << 12) | 1 | (rng.one_in(8) ? rng.below(512) << 3 : 0);
        u.val = rng.below(2) ? rng.below(g.nr_pages + 16) : rng.next();
        return u;
    case 4:
        u.ptr = pick_entry(level) | 4;
        u.val = pick_flag_range();
        return u;
    case 0: case 2: case 3:   // 3: Xen's NO_TRANSLATE, cmd 0 for a PV guest
        u.ptr = pick_entry(level) | cmd;
        u.val = rng.one_in(10) ? 0 : pick_pte(rng.one_in(8) ? 1 + unsigned(rng.below(4)) : level);
        return u;
    default:
        u.ptr = pick_entry(level) | cmd;
        u.val = rng.next();
        return u;
    }
}

mmuext_op_t pick_ext()
{
    mmuext_op_t o{};
    o.cmd = unsigned(rng.below(14));
    if (rng.one_in(12)) o.cmd = rng.one_in(2) ? 12 + unsigned(rng.below(20)) : unsigned(rng.next());
    switch (o.cmd) {
    case MMUEXT_PIN_L1_TABLE: case MMUEXT_PIN_L2_TABLE: case MMUEXT_PIN_L3_TABLE: case MMUEXT_PIN_L4_TABLE:
        o.arg1.mfn = pick_mfn(Use::Pin);
        break;
    case MMUEXT_UNPIN_TABLE: o.arg1.mfn = pick_mfn(Use::Unpin); break;
    case MMUEXT_NEW_BASEPTR: o.arg1.mfn = pick_mfn(Use::Baseptr); break;
    case MMUEXT_NEW_USER_BASEPTR: o.arg1.mfn = rng.one_in(4) ? 0 : pick_mfn(Use::UserBaseptr); break;
    case MMUEXT_INVLPG_LOCAL: case MMUEXT_INVLPG_ALL: o.arg1.linear_addr = pick_any_va(); break;
    case MMUEXT_TLB_FLUSH_MULTI: case MMUEXT_INVLPG_MULTI: {
        o.arg1.linear_addr = pick_any_va();
        uint64_t mask = alloc_a(8);
        if (mask) *reinterpret_cast<uint64_t*>(mask) = rng.of({0ull, 1ull, 2ull, 3ull, 4ull, ~0ull}) ^ (rng.one_in(8) ? rng.next() : 0);
        set_xen_guest_handle(o.arg2.vcpumask, reinterpret_cast<const void*>(mask && !rng.one_in(6) ? mask : pick_pointer(8)));
        break;
    }
    case MMUEXT_TLB_FLUSH_LOCAL: case MMUEXT_TLB_FLUSH_ALL: break;
    case MMUEXT_SET_LDT: {
        // The LDT page (setup.cc: taken while it stays read-only; selectors
        // with TI = 1 then load through it), or an LDT at a refused address
        // (unmapped, the hypervisor's, non-canonical, the top of memory), in
        // pool A (writable, refused, unless a random update_va_mapping made
        // it read-only), pool B (read-only: taken where its words pass as
        // descriptors) or the playground; sometimes misaligned; any count,
        // over 8192 too, and 0 (none). Whatever LDT loads, the instructions'
        // oracle holds: a selector load ends in none, #GP, #NP (or #SS), and
        // never #PF, the copy being validated as set_gdt's entries are.
        const uint64_t ldt = g.va(g.ldt);
        const uint64_t base = rng.of({ldt, ldt, pick_bad_va(), g.va(pool_a(unsigned(rng.below(kRegionA - 1)))),
                                      g.va(g.pool_b + rng.below(kPoolB)), pick_uvm_va() & ~(kPage - 1)});
        o.arg1.linear_addr = base + (rng.one_in(8) ? 8 * (1 + rng.below(511)) : 0);
        o.arg2.nr_ents = uint32_t(rng.of({0ull, 1ull, 2ull, 4ull, 8ull, 16ull, 512ull, 513ull, 8192ull, 8193ull, rng.next()}));
        break;
    }
    default:   // unknown here (CLEAR_PAGE, COPY_PAGE, ...): only frames the guest may lose
        o.arg1.mfn = rng.below(2) ? g.mfn(pool_a(unsigned(rng.below(kRegionA - 1)))) : pick_mfn(Use::Baseptr);
        o.arg2.src_mfn = rng.below(2) ? pick_mfn(Use::Baseptr) : rng.next();
    }
    return o;
}

void make_mmu_update(Made& m)
{
    const uint64_t n = rng.below(3) ? 1 : 1 + (rng.one_in(8) ? rng.below(64) : rng.below(8));
    uint64_t list;
    const uint64_t p = list_or_bad(n * sizeof(mmu_update_t), list);
    if (list)
        for (uint64_t i = 0; i < n; ++i) reinterpret_cast<mmu_update_t*>(list)[i] = pick_request();
    m.c = Call{__HYPERVISOR_mmu_update, {p, pick_count(n, list, sizeof(mmu_update_t)), pick_pdone(), pick_foreigndom()}};
    m.c.name = "mmu_update";
}

void make_mmuext_op(Made& m)
{
    const uint64_t n = rng.below(3) ? 1 : 1 + rng.below(6);
    uint64_t list;
    const uint64_t p = list_or_bad(n * sizeof(mmuext_op_t), list);
    if (list)
        for (uint64_t i = 0; i < n; ++i) reinterpret_cast<mmuext_op_t*>(list)[i] = pick_ext();
    m.c = Call{__HYPERVISOR_mmuext_op, {p, pick_count(n, list, sizeof(mmuext_op_t)), pick_pdone(), pick_foreigndom()}};
    m.c.name = "mmuext_op";
}

void make_update_va_mapping(Made& m)
{
    uint64_t flags = rng.below(4) | (rng.below(2) ? UVMF_ALL : UVMF_LOCAL);
    if (rng.one_in(4)) {   // UVMF_MULTI: a vCPU mask pointer in the upper bits
        uint64_t mask = alloc_a(8);
        if (mask) *reinterpret_cast<uint64_t*>(mask) = rng.of({1ull, 2ull, 3ull, 4ull, ~0ull});
        flags = ((mask && !rng.one_in(4) ? mask : pick_pointer(8)) & ~7ull) | rng.below(4);
    }
    m.c = Call{__HYPERVISOR_update_va_mapping, {pick_uvm_va(), rng.one_in(5) ? 0 : pick_pte(1), flags}};
    m.c.name = "update_va_mapping";
}

void make_xen_version(Made& m)
{
    m.c = Call{__HYPERVISOR_xen_version, {rng.below(3) ? rng.below(12) : rng.next(), pick_pointer(1024)}};
    m.c.positive = true;   // the version, the page size
    m.c.name = "xen_version";
}

// Entries run as the same calls made directly, the hypervisor's own too (as
// on Xen): past the n entries made here the memory reads as zeros
// (pick_count's zero_after), and a list that is not one (a refused or
// read-only pointer: zero page-table entries) has zero entries too, each
// an op 0, set_trap_table(NULL), which clears the trap table. So such a
// call changes the traps, and where traps must stay whole (traps_follow)
// its count is n, or 0 for a list that is not one.
void make_multicall(Made& m, unsigned depth, bool traps_follow = false)
{
    const uint64_t n = 1 + rng.below(6);
    uint64_t list;
    const uint64_t p = list_or_bad(n * sizeof(multicall_entry_t), list);
    if (list)
        for (uint64_t i = 0; i < n; ++i) {
            const Call c = depth < 2 ? make_core_call(depth + 1) : Call{__HYPERVISOR_xen_version, {0, 0}};
            multicall_entry_t& e = reinterpret_cast<multicall_entry_t*>(list)[i];
            e.op = c.nr, e.result = rng.next();
            for (unsigned k = 0; k < 6; ++k) e.args[k] = c.a[k];
        }
    // Now and then the list names itself: the hypervisor must not run it twice.
    m.c = Call{__HYPERVISOR_multicall, {p, pick_count(n, list, sizeof(multicall_entry_t))}};
    m.c.name = "multicall";
    if (!list || uint32_t(m.c.a[1]) > n) {
        if (traps_follow) m.c.a[1] = list ? n : 0;
        else m.after = After::TrapsChanged;
    }
}

void make_unknown(Made& m)
{
    // Not 20 (grant_table_op): every domain has a grant table (docs/abi.md §12.7).
    static constexpr uint64_t kUnknown[] = {6, 7, 11, 16, 19, 22, 27, 28, 31,
                                            34, 35, 36, 37, 38, 39, 40, 41, 48, 49, 50, 51, 52, 53, 54, 56, 63};
    uint64_t nr;
    switch (rng.below(6)) {
    case 0: nr = 64 + rng.below(64); break;                 // past Xen's numbers, still on the page
    case 1: nr = 128 + rng.below(1ull << 16); break;        // off the page: raw SYSCALL only
    case 2: nr = (rng.below(4) + 1) << 32 | rng.of({1ull, 13ull, 14ull, 17ull, 26ull, 55ull}); break;   // high bits
    case 3: nr = rng.of({~0ull, 1ull << 63, 0xffffffffull, 0x80000000ull}); break;
    default: nr = rng.of(kUnknown);
    }
    // Arguments a misrouted call could do no harm with.
    m.c = Call{nr, {pick_bad_va(), pick_bad_va(), pick_bad_va(), rng.next(), rng.next(), rng.next()}};
    m.c.unknown = true;
    m.c.name = "unknown hypercall";
}

// memory_op (docs/abi.md §10): the sub-op is cmd's low 6 bits; the ones
// pvmmu answers take no extent (-EINVAL with one) and write or read `arg`,
// a bad address here (-EFAULT); every other sub-op is -ENOSYS.
// maximum_ram_page without an extent returns a size, not drawn here.
void make_memory_op(Made& m)
{
    m.c.exact = true;
    m.c.nr = __HYPERVISOR_memory_op;
    m.c.name = "memory_op";
    uint64_t cmd = rng.of({2ull, 3ull, 4ull, 12ull, 14ull, rng.below(64)});
    if (rng.one_in(4)) cmd |= (1 + rng.below(1ull << 20)) << 6;
    if (rng.one_in(16)) cmd = rng.next();
    if ((cmd & 63) == XENMEM_maximum_ram_page && !(cmd >> 6)) cmd |= 1ull << 6;
    m.c.a[0] = cmd, m.c.a[1] = pick_bad_va();
    const uint64_t sub = cmd & 63;
    const bool answered = sub == XENMEM_maximum_ram_page || sub == XENMEM_current_reservation ||
                          sub == XENMEM_maximum_reservation || sub == XENMEM_maximum_gpfn;
    if (sub == XENMEM_machphys_mapping) m.c.want = -XEN_EFAULT;
    else if (!answered) m.c.want = -XEN_ENOSYS;
    else m.c.want = cmd >> 6 ? -XEN_EINVAL : -XEN_EFAULT;
}

// fpu_taskswitch: any argument, 0 (a set TS makes the next x87/SSE snippet
// #NM, which its oracle allows). vm_assist: Xen's checks (type, then
// command), and pvmmu enables only the types that mean nothing to a 64-bit
// guest, writable page tables, always on, and runstate_update_flag
// (docs/abi.md §10 "Emulation", "Runstate", §12.5).
void make_fpu_or_assist(Made& m)
{
    m.c.exact = true;
    if (rng.below(2)) {
        m.c.nr = __HYPERVISOR_fpu_taskswitch;
        m.c.name = "fpu_taskswitch";
        m.c.a[0] = rng.below(2) ? rng.below(2) : rng.next();
        m.c.want = 0;
        return;
    }
    m.c.nr = __HYPERVISOR_vm_assist;
    m.c.name = "vm_assist";
    const uint64_t cmd = rng.below(3) ? rng.below(2) : rng.next(), type = rng.below(3) ? rng.below(8) : rng.of({32ull, 63ull, 64ull, rng.next()});
    m.c.a[0] = cmd, m.c.a[1] = type;
    const uint32_t c32 = uint32_t(cmd), t32 = uint32_t(type);
    const bool valid = t32 <= 5 || t32 == 32, has = t32 <= 3 || t32 == VMASST_TYPE_runstate_update_flag;
    if (!valid) m.c.want = -XEN_EINVAL;
    else if (c32 == VMASST_CMD_disable) m.c.want = 0;
    else if (c32 == VMASST_CMD_enable) m.c.want = has ? 0 : -XEN_EINVAL;
    else m.c.want = -XEN_ENOSYS;
}

// set_debugreg / get_debugreg (pv/dr.h's rules, exact results) without
// ever enabling a breakpoint, set_segment_base (any base, exact results),
// and physdev_op, whose only sub-op,
// set_iopl, is given an argument it cannot read: the virtual IOPL stays 0,
// so port I/O stays #GP for the instruction oracles.
void make_debug_or_physdev(Made& m)
{
    m.c.exact = true;
    const uint64_t value = rng.below(2) ? pick_any_va() : rng.next();
    switch (rng.below(5)) {
    case 0: {
        const uint64_t reg = rng.below(4) ? rng.of({0ull, 1ull, 2ull, 3ull, 6ull, 7ull, 8ull, 9ull}) : rng.next();
        const uint32_t r = uint32_t(reg);
        m.c = Call{__HYPERVISOR_set_debugreg, {reg, r == 7 ? value & ~0xffull : value}};
        m.c.exact = true;
        if (r < 4) m.c.want = value < 0x0000800000000000 || value >= 0xffff880000000000 ? 0 : -XEN_EPERM;
        else if (r == 6 || r == 7) m.c.want = value >> 32 ? -XEN_EINVAL : 0;
        else if (r == 4 || r == 5) m.c.exact = false;   // as DR6/DR7, or -ENODEV with CR4.DE set
        else m.c.want = -XEN_ENODEV;
        m.c.name = "set_debugreg";
        return;
    }
    case 1: {   // DR6, DR7 (32-bit values) or a register that is not there
        const uint64_t reg = rng.of({6ull, 7ull, 8ull, 16ull, rng.next() | 1ull << 33});
        m.c = Call{__HYPERVISOR_get_debugreg, {reg}};
        m.c.positive = reg == 6 || reg == 7;
        m.c.exact = !m.c.positive;
        m.c.want = -XEN_ENODEV;
        m.c.name = "get_debugreg";
        return;
    }
    case 2: {   // set_segment_base: the vCPU's own %fs/%gs bases, which the guest never uses
        const uint64_t which = rng.below(4) ? rng.below(5) : rng.next(), base = rng.below(2) ? pick_any_va() : rng.next();
        m.c = Call{__HYPERVISOR_set_segment_base, {which, base}};
        m.c.exact = true;
        const bool ok = base < 0x0000800000000000 || base >= 0xffff880000000000;
        // GS_USER_SEL: any selector, loaded or (refused by the CPU) null: 0, as Xen.
        if (uint32_t(which) == SEGBASE_GS_USER_SEL) m.c.want = 0;
        else m.c.want = uint32_t(which) <= SEGBASE_GS_KERNEL && ok ? 0 : -XEN_EINVAL;
        m.c.name = "set_segment_base";
        return;
    }
    default: {
        const uint64_t cmd = rng.below(2) ? PHYSDEVOP_set_iopl : rng.below(3) ? rng.below(32) : rng.next();
        m.c = Call{__HYPERVISOR_physdev_op, {cmd, pick_bad_va()}};
        m.c.exact = true;
        m.c.want = cmd == PHYSDEVOP_set_iopl ? -XEN_EFAULT : -XEN_ENOSYS;
        m.c.name = "physdev_op";
        return;
    }
    }
}

void make_set_trap_table(Made& m)
{
    m.after = After::TrapsChanged;
    m.c.nr = __HYPERVISOR_set_trap_table;
    m.c.name = "set_trap_table";
    if (rng.one_in(20)) return;   // NULL: clears the table
    const bool long_list = rng.one_in(30);   // 257 entries, no terminator: read on (Xen sets no bound)
    const uint64_t n = long_list ? 257 : rng.below(40);
    uint64_t list;
    m.c.a[0] = list_or_bad((n + 1) * sizeof(trap_info_t), list);
    if (!list) return;
    auto* t = reinterpret_cast<trap_info_t*>(list);
    for (uint64_t i = 0; i < n; ++i) {
        const unsigned v = unsigned(rng.below(4) ? rng.below(32) : rng.below(256));
        uint64_t a = stub(v & 31);
        if (rng.one_in(10)) a = pick_bad_va();
        if (rng.one_in(20)) a = g.va(g.text);   // accepted: a guest address; the table is replaced before a trap
        t[i] = trap_info_t{uint8_t(v), uint8_t(rng.next()), uint16_t(rng.one_in(2) ? FLAT_RING3_CS64 : rng.next()), a};
    }
    if (!long_list) t[n] = trap_info_t{uint8_t(rng.next()), 0, 0, 0};
}

// Descriptors for set_gdt (Segment Descriptors, SDM Vol. 3A): mostly what the
// hypervisor accepts (DPL-3 data and 64-bit code, null, not present), some
// it refuses (DPL 0, 32-bit code, a TSS, a call gate, 64-bit data).
uint64_t pick_descriptor()
{
    static constexpr uint64_t kDesc[] = {
        0, 0x00cff3000000ffffull, 0x00cff3000000ffffull, 0x00affb000000ffffull, 0x00affb000000ffffull,
        0x00cf73000000ffffull,   // data, DPL 3, not present
        0x00cff1000000ffffull,   // read-only data, DPL 3
        0x00afff000000ffffull,   // conforming 64-bit code, DPL 3
        0x00cf93000000ffffull,   // data, DPL 0: refused
        0x00cffb000000ffffull,   // 32-bit code, DPL 3: refused
        0x0000e90000000067ull,   // a TSS, DPL 3: refused
        0x0000ec0000000000ull,   // a call gate, DPL 3: refused
        0x00eff3000000ffffull,   // data with L = 1: refused
    };
    return rng.one_in(16) ? rng.next() : rng.of(kDesc);
}

void make_set_gdt(Made& m)
{
    const uint64_t entries = rng.of({0ull, 1ull, 2ull, 8ull, 16ull, 511ull, 512ull, 513ull, 1024ull, 7168ull,
                                     7169ull, 0xffffffffull, (1ull << 32) | 8, rng.below(7200)});
    const uint64_t frames = (uint32_t(entries) + 511) / 512 > 14 ? 14 : (uint32_t(entries) + 511) / 512;
    uint64_t list;
    const uint64_t p = list_or_bad((frames ? frames : 1) * 8, list);
    if (list)
        for (uint64_t i = 0; i < frames; ++i) {
            uint64_t mfn = pick_mfn(Use::Gdt);
            if (rng.below(2)) {   // a pool A frame of good descriptors
                const uint64_t gp = pool_a(unsigned(rng.below(kRegionA - 1)));
                auto* d = reinterpret_cast<uint64_t*>(g.va(gp));
                for (unsigned k = 0; k < 512; ++k) d[k] = rng.one_in(40) ? pick_descriptor() : (k % 4 == 1 ? 0x00affb000000ffffull : k % 4 == 2 ? 0x00cff3000000ffffull : 0);
                for (unsigned k = rng.below(8); k; --k) d[rng.below(512)] = pick_descriptor();
                mfn = g.mfn(gp);
            }
            reinterpret_cast<uint64_t*>(list)[i] = mfn;
        }
    m.c = Call{__HYPERVISOR_set_gdt, {p, entries}};
    m.c.name = "set_gdt";
}

// update_descriptor (docs/abi.md §10): one of set_gdt's descriptors at a
// machine address that may be refused for its alignment, owner or type.
void make_update_descriptor(Made& m)
{
    m.c = Call{__HYPERVISOR_update_descriptor, {pick_descriptor_maddr(), pick_descriptor()}};
    m.c.name = "update_descriptor";
}

uint64_t pick_code_va()
{
    return rng.below(3) ? stub(unsigned(rng.below(32))) : rng.below(2) ? pick_bad_va() : pick_any_va();
}

void make_vcpu_op(Made& m)
{
    uint64_t cmd = rng.below(3) ? rng.below(4) : rng.below(2) ? rng.below(16) : rng.next();
    uint64_t id = rng.of({0ull, 1ull, 1ull, 1ull, 2ull, 31ull, 0xffffffffull, rng.next()});
    uint64_t arg = pick_pointer(64);
    if (cmd == VCPUOP_down && id == 0) id = 1;   // itself: the domain would end (it is refused for another)
    if (cmd == VCPUOP_initialise) {
        uint64_t ctx;
        arg = list_or_bad(sizeof(vcpu_guest_context_t), ctx);
        if (ctx) {
            auto& c = *reinterpret_cast<vcpu_guest_context_t*>(ctx);
            const bool safe = id == 1 && rng.below(2);
            c.user_regs.rip = safe ? uint64_t(hostile_vcpu1_entry) : pick_code_va();
            c.user_regs.rsp = safe ? g.va(g.text) : rng.below(2) ? g.va(g.text) : pick_bad_va();
            const uint64_t l4 = safe || rng.below(2) ? g.mfn(0) : pick_mfn(Use::UserBaseptr);
            c.ctrlreg[3] = xen_pfn_to_cr3(l4) | (rng.one_in(10) ? rng.below(4096) : 0);
            // The segment bases (-EINVAL for one set_segment_base refuses).
            c.fs_base = safe || rng.below(2) ? 0 : pick_any_va();
            c.gs_base_kernel = safe || rng.below(2) ? 0 : pick_any_va();
            c.gs_base_user = safe || rng.below(2) ? 0 : rng.next();
            // The trap table, callbacks and kernel stack are taken too (with
            // set_trap_table's, set_callbacks' and stack_switch's checks): none
            // for the safe start; else a #GP handler from the picks above,
            // with no draw of its own (seeds replay). Never an event callback:
            // a pending upcall would be bounced to it (docs/abi.md §12.6).
            for (trap_info_t& t : c.trap_ctxt) t = trap_info_t{};
            c.kernel_ss = c.kernel_sp = 0;
            c.event_callback_eip = 0;
            c.failsafe_callback_eip = c.syscall_callback_eip = 0;
            // No user L4 (a random one would hold a type reference the
            // page-table oracles do not know); the safe start in kernel mode.
            c.ctrlreg[1] = 0;
            if (safe) c.flags = VGCF_in_kernel;
            if (!safe) c.trap_ctxt[13] = trap_info_t{13, 0, FLAT_RING3_CS64, c.user_regs.rip};
            m.vcpu1_safe = safe && c.ctrlreg[3] == xen_pfn_to_cr3(g.mfn(0));
            m.after = id == 1 ? After::Vcpu1Init : After::Nothing;
        }
    }
    // The runstate area: a scratch record of its own, none, or a bad address
    // (the hypervisor writes the area at each change of vCPU 1's state, so
    // never into the guest's other data). register_vcpu_info: always one
    // the hypervisor refuses (a frame it took would stay writable for the
    // domain's life, and the page-table oracles would not know it).
    if (cmd == VCPUOP_register_runstate_memory_area || cmd == VCPUOP_register_vcpu_info) {
        uint64_t p;
        arg = list_or_bad(sizeof(vcpu_register_vcpu_info_t), p);
        if (p && cmd == VCPUOP_register_runstate_memory_area) {
            static vcpu_runstate_info_t scratch;
            *reinterpret_cast<uint64_t*>(p) = rng.of({uint64_t(&scratch), 0ull, pick_bad_va()});
        } else if (p) {
            auto& r = *reinterpret_cast<vcpu_register_vcpu_info_t*>(p);
            r.mfn = rng.below(2) ? g.mfn(0) : 1ull << 40;        // the L4, or beyond memory
            r.offset = uint32_t(rng.below(2) ? rng.below(4033) : 4033 + rng.below(64));
        }
    }
    if (cmd == VCPUOP_up && id == 1) {
        if (g_vcpu1_safe) m.after = After::Vcpu1Up;
        else id = rng.of({0ull, 2ull});   // vCPU 0 is up already: 0; no vCPU 2: -ENOENT
    }
    m.c = Call{__HYPERVISOR_vcpu_op, {cmd, id, arg}};
    m.c.positive = cmd == VCPUOP_is_up;
    m.c.name = "vcpu_op";
}

void make_sched_op(Made& m)
{
    const uint64_t cmd = rng.of({0ull, 0ull, 2ull, 2ull, 1ull, 3ull, 4ull, 5ull, 6ull, 7ull, 8ull, rng.next()});
    uint64_t arg = pick_bad_va();
    if (cmd == SCHEDOP_shutdown && rng.below(2)) {
        // A reason past SHUTDOWN_MAX only: a valid one would end the domain.
        arg = alloc_a(sizeof(sched_shutdown_t));
        if (arg) reinterpret_cast<sched_shutdown_t*>(arg)->reason = uint32_t(SHUTDOWN_MAX + 1 + rng.below(0xfffffff0u));
        else arg = pick_bad_va();
    }
    // SCHEDOP_block sleeps until an upcall is due (docs/abi.md §12.6): one
    // is made pending first on both vCPUs, so it returns at once. No event
    // callback is ever registered (below), so none is bounced.
    if (cmd == SCHEDOP_block)
        for (unsigned v = 0; v < 2; ++v) __atomic_store_n(&g.shared->vcpu_info[v].evtchn_upcall_pending, uint8_t(1), __ATOMIC_SEQ_CST);
    m.c = Call{__HYPERVISOR_sched_op, {cmd, arg}};
    m.c.name = "sched_op";
}

void make_console_io(Made& m)
{
    // Whole lines of the text only (a part line would run into the guest's
    // next one, the runner's `Test result:` line among them).
    uint64_t count = rng.of({0ull, 64ull, 128ull, 640ull, 0xffffffffull, 0x80000000ull, (1ull << 32) | 64});
    uint64_t buf = g.va(g.text) + rng.below(64) * 64;
    if (rng.one_in(20)) count = 0x7fffffff;   // to the end of memory: continuations, then -EFAULT
    if (rng.one_in(3)) buf = pick_bad_va();   // (readable bytes elsewhere would print as junk)
    m.c = Call{__HYPERVISOR_console_io, {rng.one_in(8) ? rng.below(4) : CONSOLEIO_write, count, buf}};
    m.c.name = "console_io";
}

void make_event_channel_op(Made& m)
{
    xencons_interface& r = *g.ring;
    const uint64_t cmd = rng.one_in(8) ? rng.below(16) : EVTCHNOP_send;
    uint64_t arg = alloc_a(sizeof(evtchn_send_t));
    if (arg) reinterpret_cast<evtchn_send_t*>(arg)->port = uint32_t(rng.below(4) ? 1 : rng.next());
    if (!arg || rng.one_in(8)) arg = pick_pointer(4);
    // The ring: a line to print, at indices that may wrap, or more than it holds.
    if (r.out_prod - r.out_cons > 1024) r.out_cons = r.out_prod;   // left corrupt last time
    if (rng.one_in(50)) r.out_cons = r.out_prod = 0xffffffff - uint32_t(rng.below(64));
    static const char kLine[] = "hostile: console ring\n";
    for (const char* c = kLine; *c; ++c) r.out[MASK_XENCONS_IDX(r.out_prod++, r.out)] = *c;
    if (rng.one_in(10)) r.out_prod = r.out_cons + 2049 + uint32_t(rng.below(1u << 30));
    m.c = Call{__HYPERVISOR_event_channel_op, {cmd, arg}};
    m.c.name = "event_channel_op";
}

void make_pvmmu_op(Made& m)
{
    switch (rng.below(7)) {
    case 0:   // no denial that is real: it could never be lifted
        m.c = Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_deny, rng.below(2) ? 0 : rng.of({0x80ull, 1ull << 32, ~0ull, 0x100ull | 1})}};
        break;
    case 1: m.c = Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_vcpu_counters, rng.of({0ull, 1ull, 2ull, ~0ull}), pick_pointer(40)}}; break;
    case 2: m.c = Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_install_retries, pick_pointer(8)}}; break;
    case 3:
        m.c = rng.below(2) ? Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_facts, pick_pointer(40)}}
                           : Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_vcpu_calls, rng.of({0ull, 1ull, 2ull, ~0ull}), pick_pointer(56)}};
        break;
    case 4:
        if (rng.one_in(20)) {   // the check itself, now and then, with any pointer
            m.c = Call{__HYPERVISOR_pvmmu_op, {PVMMUOP_check_invariants, rng.below(2) ? 0 : pick_pointer(40)}};
            break;
        }
        [[fallthrough]];
    default:
        m.c = Call{__HYPERVISOR_pvmmu_op, {6 + rng.below(100), pick_bad_va(), pick_bad_va()}};
        m.c.unknown = true;
    }
    m.c.name = "pvmmu_op";
}

Made make(unsigned depth, bool traps_follow)
{
    Made m;
    uint64_t r = rng.below(100);
    while (traps_follow && r >= 49 && r < 54) r = rng.below(100);   // the table must stay whole
    if (r < 18) make_mmu_update(m);
    else if (r < 31) make_mmuext_op(m);
    else if (r < 41) make_update_va_mapping(m);
    else if (r < 46) make_multicall(m, depth, traps_follow);
    else if (r < 49) make_xen_version(m);
    else if (r < 54) make_set_trap_table(m);
    else if (r < 57) make_set_gdt(m);
    else if (r < 59) make_update_descriptor(m);
    else if (r < 61) {
        m.c = Call{__HYPERVISOR_stack_switch, {rng.of({0xe02bull, 0xe028ull, 0xe02aull, 0xe010ull, 0ull, rng.next()}), pick_any_va()}};
        m.c.name = "stack_switch";
    } else if (r < 63) {
        // The event callback stays 0 (none): a random one would be called on
        // the return of a hypercall with an upcall pending (docs/abi.md
        // §12.6); its pick is still drawn, so seeds replay.
        const uint64_t event = pick_code_va(), failsafe = pick_code_va(), syscall = pick_code_va();
        (void)event;
        m.c = Call{__HYPERVISOR_set_callbacks, {0, failsafe, syscall}};
        m.c.name = "set_callbacks";
    } else if (r < 65) {
        uint64_t arg = alloc_a(sizeof(callback_register_t));
        if (arg) *reinterpret_cast<callback_register_t*>(arg) = callback_register_t{uint16_t(rng.below(10)), uint16_t(rng.next()), pick_code_va()};
        // No event callback (set_callbacks above): type event becomes failsafe.
        if (arg && reinterpret_cast<callback_register_t*>(arg)->type == CALLBACKTYPE_event)
            reinterpret_cast<callback_register_t*>(arg)->type = CALLBACKTYPE_failsafe;
        m.c = Call{__HYPERVISOR_callback_op, {rng.of({0ull, 1ull, 2ull, rng.next()}), arg && !rng.one_in(6) ? arg : pick_pointer(16)}};
        m.c.name = "callback_op";
    } else if (r < 66) make_console_io(m);
    else if (r < 69) make_sched_op(m);
    else if (r < 74) make_vcpu_op(m);
    else if (r < 76) make_event_channel_op(m);
    else if (r < 81) make_pvmmu_op(m);
    else if (r < 83) make_fpu_or_assist(m);
    else if (r < 85) make_memory_op(m);
    else if (r < 88) make_debug_or_physdev(m);
    else if (r < 91) m.c = make_grant_call();
    else make_unknown(m);
    return m;
}

Made g_last;

} // namespace

Call make_core_call(unsigned depth)
{
    Made m;
    const uint64_t r = rng.below(100);
    if (r < 30) make_mmu_update(m);
    else if (r < 55) make_mmuext_op(m);
    else if (r < 75) make_update_va_mapping(m);
    else if (r < 82) make_multicall(m, depth);
    else if (r < 88) make_xen_version(m);
    else if (r < 94) make_unknown(m);
    // Not the core's: the platform's run in a multicall as they do directly,
    // so only those that bad addresses leave without an effect the guest's
    // model would miss (get_debugreg, memory_op, console_io, sched_op,
    // physdev_op), and numbers no one has (-ENOSYS). Not iret: it would
    // resume the guest at whatever its stack holds (Xen's mc_exit).
    else {
        m.c = Call{rng.of({6ull, 7ull, 9ull, 11ull, 12ull, 18ull, 20ull, 22ull, 27ull, 29ull, 33ull, 50ull}), {pick_bad_va(), pick_bad_va(), pick_bad_va()}};
        // sched_op's command is an int: a bad address whose low half is a
        // command (0x8000000000000001: SCHEDOP_block, with no event to come)
        // would block or shut down; it is made one no one has.
        if (m.c.nr == __HYPERVISOR_sched_op && uint32_t(m.c.a[0]) < 64) m.c.a[0] |= 0x80000000ull;
    }
    return m.c;
}

namespace {

// Where a call the hypervisor runs writes through a pointer of its
// arguments, `bytes` long at most: mmu_update's and mmuext_op's pdone (a
// 32-bit count, also read first when the count has
// PVMMU_MMU_UPDATE_PREEMPTED), xen_version's buffer.
uint64_t* written_arg(uint64_t nr, uint64_t* a, uint64_t& bytes)
{
    bytes = 4;
    if (nr == __HYPERVISOR_mmu_update || nr == __HYPERVISOR_mmuext_op) return &a[2];
    bytes = 1024;
    if (nr == __HYPERVISOR_xen_version) return &a[1];
    return nullptr;
}

// No hypervisor write lands in an array of the operation that is still to
// be read: such a pointer becomes 0 (no pdone, or -EFAULT). The hypervisor
// reads each multicall entry, and each request after a preemption, only at
// its turn, so a write by an earlier one is what it runs: seed 20261201,
// after some 16.9 million operations, drew a multicall whose second entry,
// an mmu_update with count 0xffffffff (the PREEMPTED bit: *pdone is read,
// then written back one more), had pdone at the op of the fourth, a nested
// multicall (13, never run: refused inside a multicall); 13 + 1 made it
// update_va_mapping (14), and its list and count, the physmap address
// 0x8000ffa488 and 4, unmapped the guest's own pool A page there (the hash
// check: live table gpfn 0xa entry 506 became 0x4). The hypervisor did as
// Xen does. Without a rng draw, so every other call of a seed stays as it
// was. Nested multicalls are refused, so only the top level's entries run:
// all of them up to the count, past the array too (zeros, or later arrays'
// bytes read as entries).
void keep_arrays_intact(Call& c)
{
    uint64_t bytes;
    if (uint64_t* w = written_arg(c.nr, c.a, bytes); w && c.nr != __HYPERVISOR_xen_version && in_op_arrays(*w, bytes))
        *w = 0;   // a preempted batch reads its requests again after *pdone
    if (c.nr != __HYPERVISOR_multicall || !in_op_arrays(c.a[0], 1)) return;
    const uint64_t room = (op_arrays_end() - c.a[0]) / sizeof(multicall_entry_t);
    const uint64_t n = uint32_t(c.a[1]) < room ? uint32_t(c.a[1]) : room;
    for (uint64_t i = 0; i < n; ++i) {
        multicall_entry_t& e = reinterpret_cast<multicall_entry_t*>(c.a[0])[i];
        if (uint64_t* w = written_arg(e.op, reinterpret_cast<uint64_t*>(e.args), bytes); w && in_op_arrays(*w, bytes)) {
            if (stats.ops >= opt.trace_from) say("hostile: op %lu: multicall entry %lu's pointer 0x%lx dropped", stats.ops, i, *w);
            *w = 0;
        }
    }
}

} // namespace

Call make_call(bool traps_follow)
{
    g_last = make(0, traps_follow);
    keep_arrays_intact(g_last.c);
    return g_last.c;
}

void load_raw(const Call& c)
{
    hostile_raw_nr = c.nr;
    for (unsigned i = 0; i < 6; ++i) hostile_raw_args[i] = c.a[i];
}

void result_lost()
{
    if (g_last.after == After::TrapsChanged) traps_unknown();
    if (g_last.after != After::Nothing) g_vcpu1_safe = false;   // it may have been initialised otherwise
    g_last.after = After::Nothing;
}

namespace {

// Calls and successes per hypercall, for the summary (print_call_stats).
struct Tally {
    const char* name;
    uint64_t calls, ok;
};
Tally g_tally[32];   // more than the generators name (24 now)

void count(const char* name, int64_t rc)
{
    for (Tally& t : g_tally) {
        if (t.name && t.name != name) continue;
        t.name = name;
        ++t.calls;
        if (rc >= 0) ++t.ok;
        return;
    }
}

} // namespace

void print_call_stats()
{
    char line[200];
    unsigned n = 0;
    for (const Tally& t : g_tally) {
        if (!t.name) break;
        if (n > 140) {
            say("hostile:   %s", line);
            n = 0;
        }
        n += unsigned(format(line + n, sizeof(line) - n, "%s %lu (%lu ok); ", t.name, t.calls, t.ok));
        if (n >= sizeof(line)) n = sizeof(line) - 1;   // cut, as snprintf cuts
    }
    if (n) say("hostile:   %s", line);
}

void check_result(const Call& c, int64_t rc)
{
    ++stats.hypercalls;
    count(c.name, rc);
    if (rc < 0) ++stats.refused;
    if (c.unknown && rc != -XEN_ENOSYS) fail("hypercall 0x%lx (%s) is unknown, but returned %ld, not -ENOSYS", c.nr, c.name, rc);
    if (rc < -4095 || (rc > 0 && !c.positive)) fail("%s (0x%lx) returned %ld", c.name, c.nr, rc);
    if (c.exact && rc != c.want) fail("%s (0x%lx, 0x%lx, 0x%lx) returned %ld, expected %ld", c.name, c.nr, c.a[0], c.a[1], rc, c.want);
    if (c.nr == __HYPERVISOR_pvmmu_op && c.a[0] == PVMMUOP_check_invariants && rc > 0)
        fail("the invariant check found %ld violations (the console above has them)", rc);
    // What the guest must remember of the call's effect.
    switch (g_last.after) {
    case After::TrapsChanged: traps_unknown(); break;
    case After::Vcpu1Init:
        // A failed initialise leaves vCPU 1 down, needing another.
        g_vcpu1_safe = rc == 0 && g_last.vcpu1_safe;
        break;
    case After::Vcpu1Up:
        if (rc == 0) {
            g_vcpu1_safe = false;   // it downs itself: initialised again before the next up
            // Waited for, so that what follows (an initialise of it: -EEXIST
            // or 0) does not depend on timing and a seed replays exactly.
            uint64_t spins = 0;
            while (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) == 1)
                if (++spins > 100000000) fail("vCPU 1 did not go down");
        }
        break;
    case After::Nothing: break;
    }
    g_last.after = After::Nothing;
}

extern "C" HIDDEN char hs_raw_syscall[], hs_raw_syscall_f[], hs_raw_syscall_e[];
extern "C" HIDDEN char hs_raw_syscall_rex[], hs_raw_syscall_rex_f[], hs_raw_syscall_rex_e[];

void op_hypercall()
{
    const Call c = make_call(false);
    note(c.name, c.nr, c.a[0], c.a[1], c.a[2], c.a[3], c.a[4]);
    int64_t rc;
    if (c.nr >= 128 || c.a[5] || rng.one_in(10)) {   // by a SYSCALL of the guest's own
        load_raw(c);
        const bool rex = rng.below(2);
        const ProbeResult p = rex ? probe(hs_raw_syscall_rex, hs_raw_syscall_rex_f, hs_raw_syscall_rex_e)
                                  : probe(hs_raw_syscall, hs_raw_syscall_f, hs_raw_syscall_e);
        if (p.traps) fail("a SYSCALL (%s) trapped: vector %u at 0x%lx", c.name, p.vector, p.rip);
        rc = int64_t(p.rax);
    } else if (stats.ops >= opt.trace_from) {   // the image checked as the call returns (sealed.S)
        rc = hostile_sealed_hypercall(c.a[0], c.a[1], c.a[2], c.a[3], c.a[4], c.nr, stats.ops);
    } else {
        rc = hypercall(unsigned(c.nr), c.a[0], c.a[1], c.a[2], c.a[3], c.a[4]);
    }
    if (stats.ops >= opt.trace_from) check_after_op();
    noted_result(rc);
    check_result(c, rc);
}

} // namespace hostile
