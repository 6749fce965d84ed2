// Domain teardown; see core/domain_teardown.h.
#include "core/domain_teardown.h"

#include "core/refs.h"

namespace pvmmu {

TeardownResult relinquish_domain(Hypervisor& hv, Domain& d)
{
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        Vcpu& v = d.vcpus[i];
        if (v.has_table) put_page_and_type(hv, v.guest_table);
        if (v.has_user_table) put_page_and_type(hv, v.guest_table_user);
        v.has_table = v.has_user_table = false;
    }
    for (unsigned i = 0; i < d.nr_held; ++i) put_page_and_type(hv, d.held[i]);
    d.nr_held = 0;
    // Unpin as MMUEXT_UNPIN_TABLE does. A table's last type reference going
    // devalidates it, which drops the references its entries hold, down to
    // the frames its L1s map: with no pins and no base pointers nothing of
    // the domain is left referenced (links only go down a level, and linear
    // page tables are refused), whatever order the pins go in.
    const uint64_t n = hv.mem().nr_frames;
    for (uint64_t i = 0; i < n; ++i) {
        FrameInfo& f = hv.frame(Mfn{i});
        if (f.owner.load(std::memory_order_acquire) != d.id) continue;
        if (f.type_info.fetch_and(~ti::kPinned, std::memory_order_acq_rel) & ti::kPinned) put_page_and_type(hv, Mfn{i});
    }
    TeardownResult r;
    for (uint64_t i = 0; i < n; ++i) {
        FrameInfo& f = hv.frame(Mfn{i});
        if (f.owner.load(std::memory_order_acquire) != d.id) continue;
        if (f.count.load(std::memory_order_acquire) || f.type_count()) {
            ++r.kept;
            continue;
        }
        hv.race_point(RacePoint::TeardownGiveBack, Mfn{i});
        f.owner.store(kOwnerFree, std::memory_order_release);
        ++r.freed;
    }
    d.nr_frames = r.kept;
    if (!r.kept) hv.remove_domain(d);
    return r;
}

} // namespace pvmmu
