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
#include "core/guest_va.h"
#include "core/pt_write.h"
#include "cpu/exceptions.h"
#include "cpu/percpu.h"
#include "cpu/quiesce.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/platform.h"
#include "pv/decode.h"
#include "pv/domain.h"
#include "pv/emulate.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kMaxInsn = 15;   // the longest x86 instruction

// The entry write the decoded instruction asks for, given RAX: a write
// narrower than the entry touches only its own bytes (offset ea mod 8, the
// operand naturally aligned), the rest of the entry kept, as Xen merges a
// smaller write into the entry.
[[gnu::always_inline]] inline PtWrite write_of(const PteWriteInsn& in, uint64_t ea, uint64_t rax)
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
[[gnu::always_inline]] inline int in_core_write(Vcpu& v, Vaddr va, const PtWrite& w, uint64_t& old)
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

// The instruction `in` done on the entry at CR2: the core's write, then the
// registers and flags as the CPU leaves them; RIP past it. False (nothing
// changed, the guest's CR2 put back) when it is not the write that faulted
// or the core refuses it. kWrprotect: `in` is decode_wrprotect's, an And of
// one byte (naturally aligned whatever its address), which this copy is
// compiled for alone: write_of's and pte_write_flags' cases for it.
template <bool kWrprotect>
[[gnu::always_inline]] inline bool complete(Vcpu& v, TrapFrame& f, uint64_t cr2, const PteWriteInsn& in)
{
    const unsigned shift = unsigned(cr2 & 7) * 8;
    PtWrite w;
    if constexpr (kWrprotect) {
        w.op = PtWriteOp::And;
        w.val = (in.src << shift) | ~(uint64_t(0xff) << shift);
    } else {
        w = write_of(in, cr2, f.rax);
    }
    uint64_t old = 0;   // the core's answer, read only when it wrote
    if ((!kWrprotect && (in.op == PteOp::None || (cr2 & (in.size - 1)) != 0)) || in.ea != cr2 ||
        in_core_write(v, Vaddr{cr2}, w, old) != 0) {
        // The #PF goes to the guest: the CR2 its bounce reads (pv/traps.cc).
        // After an emulated write nothing reads it (the guest's own CR2 is
        // the vCPU's, pv/emulate.cc read_cr).
        write_cr2(cr2);
        return false;
    }
    count(v.calls.pt_writes);
    // The operand's old bytes, low-aligned (the whole entry for 8).
    const uint64_t field = old >> shift;
    if constexpr (kWrprotect) {
        f.rflags = pte_flags::logic(f.rflags, field & in.src, 1);
    } else {
        f.rflags = pte_write_flags(in, f.rflags, field, f.rax);
        if (in.op == PteOp::Xchg) {
            uint64_t* const gpr[16] = {&f.rax, &f.rcx, &f.rdx, &f.rbx, &f.rsp, &f.rbp, &f.rsi, &f.rdi,
                                       &f.r8,  &f.r9,  &f.r10, &f.r11, &f.r12, &f.r13, &f.r14, &f.r15};
            uint64_t& r = *gpr[in.reg & 15];
            r = pte_xchg_result(in, r, field);
        } else if (in.op == PteOp::Cmpxchg && old != f.rax) {
            f.rax = old;
        }
    }
    completed(f, in.len, 0);
    return true;
}

// Every write but the write-protect: out of line, so that the short way's
// core call and what follows it stay its own.
[[gnu::noinline]] bool general_write(Vcpu& v, TrapFrame& f, uint64_t cr2, const uint8_t* b, unsigned n,
                                     GprView regs)
{
    return complete<false>(v, f, cr2, decode_pte_write(b, n, regs, f.rip));
}

} // namespace

bool guest_emulate_page_fault(TrapFrame& f)
{
    // The U/S bit is always set here: the kernel runs in ring 3.
    if ((f.error & ~kPfUser) != (kPfPresent | kPfWrite)) return false;
    // The decoder knows 64-bit code only (long_mode_cs).
    if (!long_mode_cs(f.cs)) return false;
    Vcpu& v = *this_cpu().vcpu;
    // Everything below may fault and fix up (a guest copy): the guest's
    // CR2 is put back when the #PF goes to it after all.
    const uint64_t cr2 = read_cr2();
    // Sixteen bytes, two words, the decoder given at most the 15 an
    // instruction may have.
    uint8_t b[16];
    static_assert(sizeof(b) >= kMaxInsn && sizeof(b) == 16);   // guest_read16's two words
    // All sixteen on the first try in the common case: two loads
    // (guest_read16) where the sixteen lie in the guest's part of the
    // address space (guest_range_ok, as BareMetal's copies test it; v is
    // the vCPU running here); guest_fetch for an instruction near the end
    // of the last readable page.
    const unsigned got = guest_range_ok(f.rip, sizeof(b)) && guest_read16(b, reinterpret_cast<const void*>(f.rip)) == 0
                             ? unsigned(sizeof(b))
                             : guest_fetch(v, f.rip, b, sizeof(b));
    const unsigned n = got < kMaxInsn ? got : kMaxInsn;
    const GprView regs{reinterpret_cast<const uint64_t*>(&f), kTrapFrameGpr.word};   // cpu/traps.h
    // Linux's write-protect of a PTE, fork's one write per page, its own
    // way (decode_pte_write takes it first too).
    if (PteWriteInsn in; decode_wrprotect(b, n, regs, in)) return complete<true>(v, f, cr2, in);
    return general_write(v, f, cr2, b, n, regs);
}

} // namespace pvmmu::x86
