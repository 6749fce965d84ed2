// The page-fault handler of an address space: demand-zero pages, spurious
// faults fixed locally (seed 004), entries brought back in line with their VMA;
// see guest/address_space.h.
#include "guest/address_space.h"
#include "guest/pagetable.h"
#include "guest/pte_ops.h"
#include "guest/tlb.h"

namespace pvmmu::guest {

namespace {

bool prot_allows(unsigned prot, Access a)
{
    switch (a) {
    case Access::Read: return (prot & kProtMask) != kProtNone;   // x86: present is readable
    case Access::Write: return prot & kProtWrite;
    default: return prot & kProtExec;
    }
}

bool pte_allows(uint64_t e, Access a)
{
    if (!pte_present(e)) return false;
    if (a == Access::Write) return e & pte::RW;
    if (a == Access::Exec) return !(e & pte::NX);
    return true;
}

} // namespace

bool AddressSpace::handle_fault(Cpu& c, const FaultInfo& f)
{
    if (c.in_fault) return false;   // a fault inside the handler: not fixable here
    c.in_fault = true;
    ++c.stats.faults;
    bool retry = false;
    {
        SpinGuard tree(c, tree_);
        unsigned prot;
        if (!prot_at(f.va, prot) || !prot_allows(prot, f.access)) ++c.stats.denied;
        else retry = fix_fault(c, f, prot) == 0;
    }
    c.in_fault = false;
    return retry;
}

// The VMA allows the access. Either there is no page yet (demand zero), or the
// entry already allows it and the TLB entry that faulted was stale (spurious),
// or the entry was changed behind the VMA's back and is brought in line.
int AddressSpace::fix_fault(Cpu& c, const FaultInfo& f, unsigned prot)
{
    Guest& g = *c.guest;
    const Va page{f.va.v & ~(kPageSize - 1)};
    Gpfn l1;
    if (int rc = ensure_l1(c, page, l1)) return rc;
    PteLock l(c, PteRef{l1, table_index(page, Level::L1)});
    uint64_t e;
    if (!pte_read(c, l.ref(), e)) return -XEN_EFAULT;

    if (pte_none(e)) {
        // Demand zero. No preventive flush for a new mapping (seed 004): a TLB
        // that cached the miss faults once more and that fault is spurious.
        Gpfn frame;
        if (!g.frames().alloc(c, 1, frame)) return -XEN_ENOMEM;
        int rc = zero_frame(c, frame) ? set_pte(c, l, make_pte(g.mfn(frame), prot_to_bits(prot))) : -XEN_EFAULT;
        if (rc) g.frames().free(c, frame);
        else ++c.stats.demand_zero;
        return rc;
    }
    if (pte_allows(e, f.access)) {
        // Spurious (seed 004): a write (or fetch) fault came from a TLB entry
        // that predates a raise: drop it here, on this vCPU only. A read fault
        // can come from a cached miss only where the TLB caches invalid entries.
        ++c.stats.spurious;
        if (f.access != Access::Read) {
            ++c.stats.spurious_write;
            return flush_local_page(c, page);
        }
        ++c.stats.spurious_read;
        return g.boot().tlb_caches_invalid ? flush_local_page(c, page) : 0;
    }
    if (!pte_present(e) && !(e & pte::PROTNONE)) return -XEN_EFAULT;   // not an entry of ours
    uint64_t old;
    if (int rc = ptep_modify_prot_start(c, l, old)) return rc;
    return ptep_modify_prot_commit(c, l, old, pte_modify(old, prot));
}

} // namespace pvmmu::guest
