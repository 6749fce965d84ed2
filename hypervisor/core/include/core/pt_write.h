// Xen's "writable page tables" (ptwr) for PV kernels, the platform-neutral
// half (docs/abi.md §12.5): a kernel's own write to one entry of one of its
// L1 tables, which the CPU refused because the table is mapped read-only,
// done as if the instruction had done it — the entry validated and its
// references changed exactly as mmu_update cmd 0 would, installed by a
// compare-exchange against the value the write was computed from. The arch
// code decodes the instruction (hypervisor/arch/x86_64/pv/decode.h) and calls this; the sim
// tests call it directly with threads that set A/D as hardware does.
//
// A cold path: nothing of mmu_update's changes for it.
#pragma once

#include "core/pagetable.h"

namespace pvmmu {

// What one instruction does to the 8-byte entry, as a function of the entry's
// value `cur` at the instant of the install:
//   Store    (cur & ~mask) | (val & mask): MOV and XCHG of the whole entry
//            (mask ~0), or MOV of a naturally aligned half (mask 32 bits),
//            which Xen merges into the entry the same way;
//   And, Or  cur & val, cur | val: AND, OR, BTR (val ~bit), BTS (val bit);
//   Cmpxchg  val where cur == expect, else no write at all.
enum class PtWriteOp : uint8_t { Store, And, Or, Cmpxchg };

struct PtWrite {
    PtWriteOp op = PtWriteOp::Store;
    uint64_t val = 0;
    uint64_t mask = ~0ull;    // Store only
    uint64_t expect = 0;      // Cmpxchg only
};

constexpr uint64_t apply_pt_write(const PtWrite& w, uint64_t cur)
{
    switch (w.op) {
    case PtWriteOp::Store: return (cur & ~w.mask) | (w.val & w.mask);
    case PtWriteOp::And: return cur & w.val;
    case PtWriteOp::Or: return cur | w.val;
    case PtWriteOp::Cmpxchg: return cur == w.expect ? w.val : cur;
    }
    return cur;
}

// The write `w` to entry `index` of frame `l1`, which must be a validated L1
// table owned by `self` (-EINVAL otherwise, as mmu_update answers), and
// `self` allowed mmu_update cmd 0 (Perm::MmuNormal; -EPERM otherwise). `old`
// receives the entry's value the write replaced (XCHG's, CMPXCHG's and BTR's
// result): hardware A/D set before the install included, none set after it
// lost, because a compare-exchange that loses to hardware reads the entry
// again and computes the write anew. On an error nothing changed. What the
// TLBs hold is the guest's business, as after mmu_update.
[[nodiscard]] int emulate_l1_write(Hypervisor& hv, DomId self, Mfn l1, unsigned index, const PtWrite& w,
                                   uint64_t& old);

// emulate_l1_write on the entry that a write faulting at `va` hit: the L1
// frame that v's kernel page tables map `va` to (found lock-free, as
// walk_to_l1 finds a table), entry (va mod 4096) / 8, for v's domain.
// -EINVAL when the tables map va to no validated L1 of that domain;
// otherwise emulate_l1_write's answers (-EPERM without Perm::MmuNormal or
// for a frame the new entry may not map, the entry checks' errnos).
[[nodiscard]] int emulate_pt_write(Hypervisor& hv, const Vcpu& v, Vaddr va, const PtWrite& w, uint64_t& old);

} // namespace pvmmu
