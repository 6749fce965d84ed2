// Page-table management through hypercalls; see guest/pagetable.h.
#include "guest/pagetable.h"

#include "guest/hypercalls.h"
#include "guest/pte_ops.h"

namespace pvmmu::guest {

bool zero_frame(Cpu& c, Gpfn g)
{
    const Va va = c.guest->va(g);
    for (uint64_t off = 0; off < kPageSize; off += sizeof(uint64_t))
        if (!c.mem.store(va + off, 0)) return false;
    return true;
}

int physmap_set_writable(Cpu& c, Gpfn g, bool writable)
{
    // A frame whose physmap L1 is not known yet (Guest::init maps the rest
    // of Xen's physmap in order) has no entry to change.
    if (!c.guest->physmap_mapped(g)) return -XEN_EINVAL;
    PteLock l(c, c.guest->physmap_pte(g));
    uint64_t old;
    if (int rc = ptep_modify_prot_start(c, l, old)) return rc;
    const uint64_t nv = writable ? old | pte::RW : old & ~pte::RW;
    const int rc = ptep_modify_prot_commit(c, l, old, nv);
    if (rc) {
        // Without cmd 2, start emptied the entry: put the old mapping back.
        uint64_t now;
        if (pte_present(old) && pte_read(c, l.ref(), now) && pte_none(now)) (void)set_pte(c, l, old);
    }
    return rc;
}

int pt_alloc(Cpu& c, Gpfn& out)
{
    Gpfn g;
    if (!c.guest->frames().alloc(c, 1, g)) return -XEN_ENOMEM;
    if (!zero_frame(c, g)) {
        c.guest->frames().free(c, g);
        return -XEN_EFAULT;
    }
    if (!c.guest->boot().coherent_walker) {
        for (unsigned line = 0; line < kEntriesPerTable / kPteLine; ++line) {
            c.mem.clean(c.guest->va(g) + line * kPteLine * sizeof(uint64_t));
            ++c.stats.cleans;
        }
    }
    if (int rc = physmap_set_writable(c, g, false)) {
        c.guest->frames().free(c, g);
        return rc;
    }
    out = g;
    return 0;
}

int pt_free(Cpu& c, Gpfn t)
{
    if (int rc = physmap_set_writable(c, t, true)) return rc;
    c.guest->frames().free(c, t);
    return 0;
}

int pt_pin(Cpu& c, Gpfn t, Level l)
{
    return int(mmuext_one(c, MMUEXT_PIN_L1_TABLE + unsigned(l) - 1, c.guest->mfn(t).v));
}

int pt_unpin(Cpu& c, Gpfn t) { return int(mmuext_one(c, MMUEXT_UNPIN_TABLE, c.guest->mfn(t).v)); }

int pt_link(Cpu& c, Gpfn parent, unsigned index, Gpfn child)
{
    PteLock l(c, PteRef{parent, index});
    return set_pte(c, l, make_pte(c.guest->mfn(child), pte::kTableLink));
}

int pt_unlink(Cpu& c, Gpfn parent, unsigned index)
{
    PteLock l(c, PteRef{parent, index});
    return set_pte(c, l, 0);
}

bool pt_child(Cpu& c, Gpfn parent, unsigned index, Gpfn& child)
{
    uint64_t e;
    return pte_read(c, PteRef{parent, index}, e) && pte_present(e) && c.guest->gpfn_of(pte_mfn(e), child);
}

int pt_child_or_new(Cpu& c, Gpfn parent, unsigned index, Gpfn& child)
{
    if (pt_child(c, parent, index, child)) return 0;
    if (int rc = pt_alloc(c, child)) return rc;
    if (int rc = pt_link(c, parent, index, child)) {
        (void)pt_free(c, child);
        return rc;
    }
    return 0;
}

int switch_base(Cpu& c, Gpfn l4) { return int(mmuext_one(c, MMUEXT_NEW_BASEPTR, c.guest->mfn(l4).v)); }

} // namespace pvmmu::guest
