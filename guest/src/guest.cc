// Domain-wide guest state: start of day, feature detection and fallback, fault
// dispatch; see guest/guest.h.
#include "guest/guest.h"

#include "guest/address_space.h"
#include "guest/hypercalls.h"
#include "guest/pte.h"
#include "guest/pte_ops.h"
#include "guest/tlb.h"

namespace pvmmu::guest {

int Guest::init(Cpu& boot, const BootInfo& bi)
{
    boot_ = bi;
    const uint64_t first = bi.first_free > bi.nr_pt_frames ? bi.first_free : bi.nr_pt_frames;
    if (first >= bi.nr_frames || !frames_.init(Gpfn{first}, Gpfn{bi.nr_frames})) return -XEN_EINVAL;
    if (int rc = attach(boot)) return rc;
    return detect_features(boot);
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
