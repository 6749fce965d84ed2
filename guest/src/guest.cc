// Domain-wide guest state: start of day, feature detection and fallback, fault
// dispatch; see guest/guest.h.
#include "guest/guest.h"

#include "guest/address_space.h"
#include "guest/hypercalls.h"
#include "guest/mmu_batch.h"
#include "guest/pagetable.h"
#include "guest/pte.h"
#include "guest/pte_ops.h"
#include "guest/tlb.h"

namespace pvmmu::guest {

int Guest::init(Cpu& boot, const BootInfo& bi)
{
    boot_ = bi;
    if (bi.nr_frames > FrameAllocator::kMaxFrames) return -XEN_EINVAL;
    // A P2M list that is one contiguous run (pvmmu's builder) takes the
    // arithmetic path; any other needs the M2P to invert it.
    if (bi.p2m) {
        uint64_t g = 1;
        while (g < bi.nr_frames && bi.p2m[g] == bi.p2m[0] + g) ++g;
        if (g == bi.nr_frames) {
            boot_.first_mfn = Mfn{bi.p2m[0]};
            boot_.p2m = nullptr;
        } else if (!bi.m2p) {
            return -XEN_EINVAL;
        }
        p2m_min_ = p2m_max_ = Mfn{bi.p2m[0]};
        for (g = 1; g < bi.nr_frames; ++g) {
            if (bi.p2m[g] < p2m_min_.v) p2m_min_ = Mfn{bi.p2m[g]};
            if (bi.p2m[g] > p2m_max_.v) p2m_max_ = Mfn{bi.p2m[g]};
        }
    }
    const uint64_t tables_end = bi.first_pt + bi.nr_pt_frames;
    const uint64_t first = bi.first_free > tables_end ? bi.first_free : tables_end;
    if (first >= bi.nr_frames || !frames_.init(Gpfn{first}, Gpfn{bi.nr_frames})) return -XEN_EINVAL;
    if (int rc = attach(boot)) return rc;
    if (int rc = map_physmap(boot)) return rc;
    return detect_features(boot);
}

// The physmap is walked from the L4 one L1 (2 MiB of it) at a time. An L1
// the builder did not make is made here from a free frame that is already
// mapped (the walk goes up from gpfn 0, and the allocator hands out the
// lowest free frames first, which lie in the boot region) and filled from
// the P2M with the flags of the builder's mapping of a free frame.
int Guest::map_physmap(Cpu& c)
{
    const uint64_t nr_l1 = (boot_.nr_frames + kEntriesPerTable - 1) / kEntriesPerTable;
    uint64_t flags = 0;
    for (uint64_t i = 0; i < nr_l1; ++i) {
        const Va at = va(Gpfn{i * kEntriesPerTable});
        Gpfn l2;
        if (int rc = physmap_l2(c, at, l2)) return rc;
        const PteRef link{l2, table_index(at, Level::L2)};
        uint64_t e;
        if (!pte_read(c, link, e)) return -XEN_EFAULT;
        if (e & pte::PS) return -XEN_EINVAL;   // a large page: no L1 to name entries by
        if (pte_present(e)) {
            if (!gpfn_of(pte_mfn(e), physmap_l1_[i])) return -XEN_EINVAL;
            continue;
        }
        // The flags: those of the mapping of the first free frame, below.
        if (!flags && (frames_.first().v >= i * kEntriesPerTable ||
                       !pte_read(c, physmap_pte(frames_.first()), flags) || !(flags & pte::P)))
            return -XEN_EINVAL;
        flags &= ~pte::ADDR;
        Gpfn l1;
        if (int rc = pt_child_or_new(c, l2, link.index, l1)) return rc;
        physmap_l1_[i] = l1;
        if (int rc = fill_physmap_l1(c, l1, i * kEntriesPerTable, flags)) return rc;
    }
    return 0;
}

// The L2 that maps va, with an L3 and L2 made where the builder has none.
int Guest::physmap_l2(Cpu& c, Va va, Gpfn& l2)
{
    Gpfn l3;
    if (int rc = pt_child_or_new(c, l4(), table_index(va, Level::L4), l3)) return rc;
    return pt_child_or_new(c, l3, table_index(va, Level::L3), l2);
}

// A new physmap L1's entries: gpfns [first, first + 512) of the domain's.
int Guest::fill_physmap_l1(Cpu& c, Gpfn l1, uint64_t first, uint64_t flags)
{
    SpinGuard lock(c, pte_lock(l1));
    MmuBatch b(c, l1, kEntriesPerTable);
    for (unsigned j = 0; j < kEntriesPerTable && first + j < boot_.nr_frames; ++j)
        if (int rc = b.add(MMU_NORMAL_PT_UPDATE, j, make_pte(mfn(Gpfn{first + j}), flags))) return rc;
    return b.flush();
}

int Guest::attach(Cpu& c)
{
    c.guest = this;
    Gpfn g;
    if (!frames_.alloc(c, kScratchPages, g)) return -XEN_ENOMEM;
    c.scratch = va(g);
    return 0;
}

int Guest::detect_features(Cpu& c)
{
    // xen_feature_info_t {submap_idx, submap}: two 32-bit words, one store.
    static_assert(sizeof(xen_feature_info_t) == 8);
    const Va fi = c.scratch_at(scratch::kWord);
    if (!c.mem.store(fi, 0)) return -XEN_EFAULT;   // submap_idx 0
    const long rc = hypercall(c, __HYPERVISOR_xen_version, XENVER_get_features, fi.v);
    uint64_t w = 0;
    if (rc == -XEN_ENOSYS) {
        features_ = 0;   // no feature interface: plain Xen semantics only
    } else if (rc < 0) {
        return int(rc);
    } else {
        if (!c.mem.load(fi, w)) return -XEN_EFAULT;
        features_ = uint32_t(w >> 32);
    }
    const bool atomic = features_ & (1u << XENFEAT_mmu_pt_update_preserve_ad);
    const bool range = features_ & (1u << PVMMU_FEAT_flag_range_update);
    // The FlagRange level also uses cmd 2 (for PROT_NONE pages coming back).
    const MmuLevel l = atomic && range ? MmuLevel::FlagRange : atomic ? MmuLevel::Atomic : MmuLevel::Normal;
    level_.store(uint8_t(l), std::memory_order_release);
    return 0;
}

bool Guest::refused(Cpu& c, unsigned cmd)
{
    if (cmd != MMU_FLAG_RANGE_UPDATE && cmd != MMU_ATOMIC_PT_UPDATE) return false;   // cmd 0: no fallback
    const uint8_t floor = uint8_t(cmd == MMU_FLAG_RANGE_UPDATE ? MmuLevel::Atomic : MmuLevel::Normal);
    uint8_t cur = level_.load(std::memory_order_acquire);
    while (cur < floor && !level_.compare_exchange_weak(cur, floor, std::memory_order_acq_rel)) {
    }
    if (cur < floor) ++c.stats.downgrades;   // this call dropped it
    return true;
}

bool Guest::add_space(AddressSpace* as)
{
    for (auto& s : spaces_) {
        AddressSpace* none = nullptr;
        if (s.compare_exchange_strong(none, as, std::memory_order_acq_rel)) return true;
    }
    return false;
}

void Guest::remove_space(AddressSpace* as)
{
    for (auto& s : spaces_) {
        AddressSpace* me = as;
        s.compare_exchange_strong(me, nullptr, std::memory_order_acq_rel);
    }
}

bool Guest::handle_fault(Cpu& c, const FaultInfo& f)
{
    for (auto& s : spaces_) {
        AddressSpace* as = s.load(std::memory_order_acquire);
        if (as && as->contains(f.va)) return as->handle_fault(c, f);
    }
    return fix_physmap_fault(c, f);
}

bool Guest::fix_physmap_fault(Cpu& c, const FaultInfo& f)
{
    const uint64_t off = f.va.v - boot_.physmap.v;
    if (f.va.v < boot_.physmap.v || off >= (boot_.nr_frames << kPageShift) || !f.present ||
        f.access != Access::Write)
        return false;
    uint64_t e;
    if (!pte_read(c, physmap_pte(Gpfn{off >> kPageShift}), e) || !(e & pte::RW)) return false;
    const Va page{f.va.v & ~(kPageSize - 1)};
    c.physmap_fixes = page.v == c.physmap_fix.v ? c.physmap_fixes + 1 : 1;
    c.physmap_fix = page;
    if (c.physmap_fixes > kMaxPhysmapFixes) return false;
    ++c.stats.faults;
    ++c.stats.spurious;
    ++c.stats.spurious_write;
    return flush_local_page(c, page) == 0;
}

} // namespace pvmmu::guest
