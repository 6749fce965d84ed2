// Address spaces: the tree, the VMAs, entering and leaving; see
// guest/address_space.h (mprotect.cc and page_fault.cc hold the rest).
#include "guest/address_space.h"

#include "guest/hypercalls.h"
#include "guest/pagetable.h"
#include "guest/pte_ops.h"
#include "guest/tlb.h"

namespace pvmmu::guest {

// --- The tree ----------------------------------------------------------------

int AddressSpace::create(Cpu& c, unsigned slot)
{
    Guest& g = *c.guest;
    if (live_ || slot >= 256 || slot == table_index(g.boot().physmap, Level::L4)) return -XEN_EINVAL;
    Gpfn existing;
    if (pt_child(c, g.l4(), slot, existing)) return -XEN_EBUSY;
    Gpfn root;
    if (int rc = pt_alloc(c, root)) return rc;
    int rc = pt_pin(c, root, Level::L3);
    if (rc == 0) {
        rc = pt_link(c, g.l4(), slot, root);
        if (rc) (void)pt_unpin(c, root);
    }
    if (rc) {
        (void)pt_free(c, root);
        return rc;
    }
    slot_ = slot;
    root_ = root;
    nr_vmas_ = 0;
    vcpus_.store(0, std::memory_order_release);
    live_ = true;
    if (g.add_space(this)) return 0;   // faults in the space reach it from now on
    (void)destroy(c);
    return -XEN_ENOSPC;
}

bool AddressSpace::find_l1(Cpu& c, Va va, Gpfn& l1)
{
    Gpfn l2;
    return pt_child(c, root_, table_index(va, Level::L3), l2) && pt_child(c, l2, table_index(va, Level::L2), l1);
}

// Tables are linked empty; the hypervisor validates each as the level below its
// parent when the link is made.
int AddressSpace::ensure_l1(Cpu& c, Va va, Gpfn& l1)
{
    Gpfn l2;
    if (int rc = pt_child_or_new(c, root_, table_index(va, Level::L3), l2)) return rc;
    return pt_child_or_new(c, l2, table_index(va, Level::L2), l1);
}

int AddressSpace::destroy(Cpu& c)
{
    if (!live_) return -XEN_EINVAL;
    Guest& g = *c.guest;
    SpinGuard tree(c, tree_);
    g.remove_space(this);
    if (int rc = pt_unlink(c, g.l4(), slot_)) return rc;
    if (int rc = pt_unpin(c, root_)) return rc;
    // The tree is no table any more; no vCPU may keep translations through it.
    FlushPlan all(0);
    all.add(base());
    if (int rc = flush_tlb(c, all, vcpus() | 1ull << c.id)) return rc;
    for (unsigned i3 = 0; i3 < kEntriesPerTable; ++i3) {
        Gpfn l2;
        if (!pt_child(c, root_, i3, l2)) continue;
        for (unsigned i2 = 0; i2 < kEntriesPerTable; ++i2) {
            Gpfn l1;
            if (!pt_child(c, l2, i2, l1)) continue;
            for (unsigned i1 = 0; i1 < kEntriesPerTable; ++i1) {
                uint64_t e;
                Gpfn page;
                if (pte_read(c, PteRef{l1, i1}, e) && (pte_present(e) || (e & pte::PROTNONE)) &&
                    g.gpfn_of(pte_mfn(e), page))
                    g.frames().free(c, page);
            }
            if (int rc = pt_free(c, l1)) return rc;
        }
        if (int rc = pt_free(c, l2)) return rc;
    }
    live_ = false;
    nr_vmas_ = 0;
    return pt_free(c, root_);
}

// --- VMAs ----------------------------------------------------------------------

int AddressSpace::find_vma(Va va) const
{
    for (unsigned i = 0; i < nr_vmas_; ++i)
        if (va.v >= vmas_[i].start.v && va.v < vmas_[i].end.v) return int(i);
    return -1;
}

bool AddressSpace::prot_at(Va va, unsigned& prot) const
{
    const int i = find_vma(va);
    if (i < 0) return false;
    prot = vmas_[i].prot;
    return true;
}

bool AddressSpace::covered(Va start, Va end) const
{
    uint64_t pos = start.v;
    for (unsigned i = 0; i < nr_vmas_ && pos < end.v; ++i)
        if (vmas_[i].start.v <= pos && vmas_[i].end.v > pos) pos = vmas_[i].end.v;
    return pos >= end.v;
}

int AddressSpace::split_at(Va at)
{
    const int i = find_vma(at);
    if (i < 0 || vmas_[i].start == at) return 0;
    if (nr_vmas_ == kMaxVmas) return -XEN_ENOMEM;
    for (unsigned j = nr_vmas_; j > unsigned(i) + 1; --j) vmas_[j] = vmas_[j - 1];
    vmas_[i + 1] = Vma{at, vmas_[i].end, vmas_[i].prot};
    vmas_[i].end = at;
    ++nr_vmas_;
    return 0;
}

void AddressSpace::merge()
{
    unsigned out = 0;
    for (unsigned i = 0; i < nr_vmas_; ++i) {
        if (out > 0 && vmas_[out - 1].end == vmas_[i].start && vmas_[out - 1].prot == vmas_[i].prot)
            vmas_[out - 1].end = vmas_[i].end;
        else
            vmas_[out++] = vmas_[i];
    }
    nr_vmas_ = out;
}

int AddressSpace::set_prot(Va start, Va end, unsigned prot)
{
    // Room for both splits first, so a failure changes nothing.
    const int a = find_vma(start), b = find_vma(Va{end.v - 1});
    const unsigned need = (a >= 0 && vmas_[a].start != start) + (b >= 0 && vmas_[b].end != end);
    if (nr_vmas_ + need > kMaxVmas) return -XEN_ENOMEM;
    if (int rc = split_at(start)) return rc;
    if (int rc = split_at(end)) return rc;
    for (unsigned i = 0; i < nr_vmas_; ++i)
        if (vmas_[i].start.v >= start.v && vmas_[i].end.v <= end.v) vmas_[i].prot = prot;
    merge();
    return 0;
}

int AddressSpace::map_anon(Cpu& c, Va start, uint64_t len, unsigned prot)
{
    len = align_up(len, kPageSize);
    const Va end = start + len;
    if ((start.v & (kPageSize - 1)) || len == 0 || (prot & ~kProtMask)) return -XEN_EINVAL;
    if (!contains(start) || end.v - base().v > size()) return -XEN_ENOMEM;
    SpinGuard tree(c, tree_);
    unsigned at = 0;
    for (; at < nr_vmas_ && vmas_[at].start.v < end.v; ++at)
        if (vmas_[at].end.v > start.v) return -XEN_EEXIST;
    if (nr_vmas_ == kMaxVmas) return -XEN_ENOMEM;
    for (unsigned j = nr_vmas_; j > at; --j) vmas_[j] = vmas_[j - 1];
    vmas_[at] = Vma{start, end, prot};
    ++nr_vmas_;
    merge();
    return 0;
}

// --- vCPUs -----------------------------------------------------------------

void AddressSpace::enter(Cpu& c) { vcpus_.fetch_or(1ull << c.id, std::memory_order_acq_rel); }

int AddressSpace::leave(Cpu& c)
{
    vcpus_.fetch_and(~(1ull << c.id), std::memory_order_acq_rel);
    ++c.stats.flush_local;
    return int(mmuext_one(c, MMUEXT_TLB_FLUSH_LOCAL, 0));
}

bool AddressSpace::pte_of(Cpu& c, Va va, PteRef& out)
{
    Gpfn l1;
    if (!find_l1(c, va, l1)) return false;
    out = PteRef{l1, table_index(va, Level::L1)};
    return true;
}

} // namespace pvmmu::guest
