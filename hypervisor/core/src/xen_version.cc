// HYPERVISOR_xen_version (hypercall 17): the Xen interface version pvmmu speaks,
// the page size, and the feature bits — which follow the domain's policy, so a
// guest denied a command never detects it (SPEC §3 "Feature discovery").
#include <pvmmu/abi.h>

#include "core/hypercall.h"

namespace pvmmu {

static constexpr long kXenMajor = 4, kXenMinor = 17;   // the libxen-dev headers' release

static uint32_t feature_submap0(const Domain& d)
{
    uint32_t bits = 0;
    if (d.policy.allows(Perm::MmuAtomic)) bits |= 1u << XENFEAT_mmu_pt_update_preserve_ad;
    if (d.policy.allows(Perm::MmuFlagRange)) bits |= 1u << PVMMU_FEAT_flag_range_update;
    return bits;
}

HcResult do_xen_version(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    const Vaddr arg{f.arg[1]};
    switch (f.arg[0]) {
    case XENVER_version:
        return done((kXenMajor << 16) | kXenMinor);
    case XENVER_pagesize:
        return done(long(kPageSize));
    case XENVER_extraversion: {
        xen_extraversion_t s = "-pvmmu";
        return done(hv.platform().copy_to_guest(v, arg, s, sizeof(s)));
    }
    case XENVER_get_features: {
        xen_feature_info_t fi;
        if (hv.platform().copy_from_guest(v, &fi, arg, sizeof(fi))) return done(-XEN_EFAULT);
        fi.submap = fi.submap_idx == 0 ? feature_submap0(*v.domain) : 0;
        return done(hv.platform().copy_to_guest(v, arg, &fi, sizeof(fi)));
    }
    default:
        return done(-XEN_ENOSYS);
    }
}

} // namespace pvmmu
