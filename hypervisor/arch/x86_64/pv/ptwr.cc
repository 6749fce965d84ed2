// Xen's "writable page tables" for a 64-bit PV kernel (docs/abi.md §12.5):
// the kernel maps its L1 tables read-only, as it must, and writes an entry
// with an ordinary instruction anyway (Linux: WRITE_ONCE, xchg, cmpxchg,
// lock btr on a PTE); the CPU raises #PF, and the hypervisor does the write
// as the instruction would have, through the core's checked update of that
// one entry (core/pt_write.h), then continues after the instruction.
//
// What is taken, all else keeping its #PF exactly as the CPU raised it
// (error code, CR2): a write fault on a present page (P=1, W=1; no reserved
// bit, fetch, protection key or shadow stack) whose address the guest's own
// tables map to a validated L1 of its own domain; the instruction at RIP one
// that pv/decode.h's decode_pte_write knows, whose memory operand,
// computed from the registers, is exactly CR2, naturally aligned; and an
// entry the core accepts. Decoding is bounded: at most 15 bytes, read
// through the guest's tables as any guest pointer is, one pass, no loop
// over guest data; nothing is trusted beyond the bytes checked.
#include "core/pt_write.h"
#include "cpu/exceptions.h"
#include "cpu/quiesce.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/platform.h"
#include "pv/decode.h"
#include "pv/domain.h"
#include "pv/emulate.h"
#include "pv/ptwr.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kMaxInsn = 15;   // the longest x86 instruction

// The entry write the decoded instruction asks for, given RAX: a write
// narrower than the entry touches only its own bytes (offset ea mod 8, the
// operand naturally aligned), the rest of the entry kept, as Xen merges a
// smaller write into the entry.
PtWrite write_of(const PteWriteInsn& in, uint64_t ea, uint64_t rax)
{
    const unsigned shift = unsigned(ea & 7) * 8;
    const uint64_t mask = (in.size == 8 ? ~0ull : (1ull << (8 * in.size)) - 1) << shift;
    PtWrite w;
    switch (in.op) {
    case PteOp::Mov:
    case PteOp::Xchg:
        w.op = PtWriteOp::Store;
        w.mask = mask;
        w.val = in.src << shift;
        break;
    case PteOp::Cmpxchg:
        w.op = PtWriteOp::Cmpxchg;
        w.val = in.src;
        w.expect = rax;
        break;
    case PteOp::And:
        w.op = PtWriteOp::And;
        w.val = (in.src << shift) | ~mask;
        break;
    case PteOp::Or:
        w.op = PtWriteOp::Or;
        w.val = in.src << shift;
        break;
    case PteOp::Bts:
        w.op = PtWriteOp::Or;
        w.val = 1ull << in.src;
        break;
    case PteOp::Btr:
        w.op = PtWriteOp::And;
        w.val = ~(1ull << in.src);
        break;
    case PteOp::None: break;
    }
    return w;
}

// The walk to the written frame and the core's update of its entry, inside
// a section with interrupts on, as a hypercall runs them (pv/emulate.cc's
// in_core says why): 0 or the core's errno.
int in_core_write(Vcpu& v, Vaddr va, const PtWrite& w, uint64_t& old)
{
    Hypervisor& hv = *core();
    sti();
    int rc;
    {
        const Section s;
        rc = emulate_pt_write(hv, v, va, w, old);
    }
    cli();
    return rc;
}

} // namespace

unsigned guest_pt_write(Vcpu& v, TrapFrame& f)
{
    // The U/S bit is always set here: the kernel runs in ring 3.
    if ((f.error & ~kPfUser) != (kPfPresent | kPfWrite)) return 0;
    // Everything below may fault and fix up (a guest copy): the guest's
    // CR2 is put back when the #PF goes to it after all.
    const uint64_t cr2 = read_cr2();
    // Two words read (guest_copy moves words, then single bytes), the
    // decoder given at most the 15 an instruction may have.
    uint8_t b[16];
    static_assert(sizeof(b) >= kMaxInsn && sizeof(b) % 8 == 0);
    // All sixteen on the first try in the common case (guest_fetch's own
    // first step, without its call); guest_fetch for an instruction near
    // the end of the last readable page.
    const unsigned got = bare_metal().copy_from_guest(v, b, Vaddr{f.rip}, sizeof(b)) == 0
                             ? unsigned(sizeof(b))
                             : guest_fetch(v, f.rip, b, sizeof(b));
    const unsigned n = got < kMaxInsn ? got : kMaxInsn;
    const GprView regs{reinterpret_cast<const uint64_t*>(&f), kTrapFrameGpr.word};   // cpu/traps.h
    const PteWriteInsn in = decode_pte_write(b, n, regs, f.rip);
    uint64_t old = 0;
    bool done = false;
    if (in.op != PteOp::None && in.ea == cr2 && (cr2 & (in.size - 1)) == 0)
        done = in_core_write(v, Vaddr{cr2}, write_of(in, cr2, f.rax), old) == 0;
    write_cr2(cr2);
    if (!done) return 0;
    count(v.calls.pt_writes);
    // The operand's old bytes, low-aligned (the whole entry for 8).
    const uint64_t field = old >> ((cr2 & 7) * 8);
    f.rflags = pte_write_flags(in, f.rflags, field, f.rax);
    if (in.op == PteOp::Xchg) {
        uint64_t* const gpr[16] = {&f.rax, &f.rcx, &f.rdx, &f.rbx, &f.rsp, &f.rbp, &f.rsi, &f.rdi,
                                   &f.r8,  &f.r9,  &f.r10, &f.r11, &f.r12, &f.r13, &f.r14, &f.r15};
        uint64_t& r = *gpr[in.reg & 15];
        r = pte_xchg_result(in, r, field);
    } else if (in.op == PteOp::Cmpxchg && old != f.rax) {
        f.rax = old;
    }
    return in.len;
}

} // namespace pvmmu::x86
