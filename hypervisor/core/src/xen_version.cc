// HYPERVISOR_xen_version (hypercall 17): the Xen interface version pvmmu speaks,
// the page size, the feature bits — which follow the domain's policy, so a
// guest denied a command never detects it (docs/design.md §3 "Feature discovery") — and
// the strings and parameters Xen gives every guest. As Xen's default policy:
// every sub-op but the command line and the build id is open to any domain;
// those two are for a privileged domain, which pvmmu has none of (-EPERM).
#include <pvmmu/abi.h>

#include "core/hypercall.h"

namespace pvmmu {

// Submap 0 as Xen 4.17 gives a 64-bit PV domU (common/kernel.c), less what
// is not true of pvmmu (docs/abi.md §8): gnttab_map_avail_bits (a grant
// mapping takes the map request's GNTMAP_guest_avail bits into the PTE's
// bits 9-11, core/src/gnttab_map.cc; a domain without a grant table, whose
// GNTTABOP answers -ENOSYS, makes no mapping the bit could be wrong about,
// and Linux refuses to boot without it) and direct_mapped (a PV guest's frame numbers
// are machine frames) always; preserve_ad and pvmmu's flag range as the
// policy allows. Not highmem_assist (no MMUEXT_CLEAR_PAGE/COPY_PAGE),
// memory_op_vnode_supported (no XENMEMF_vnode) or pae_pgdir_above_4gb (a
// 32-bit PAE matter, reported by Xen after VMASST_TYPE_pae_extended_cr3).
static uint32_t feature_submap0(const Domain& d)
{
    uint32_t bits = 1u << XENFEAT_gnttab_map_avail_bits | 1u << XENFEAT_direct_mapped;
    if (d.policy.allows(Perm::MmuAtomic)) bits |= 1u << XENFEAT_mmu_pt_update_preserve_ad;
    if (d.policy.allows(Perm::MmuFlagRange)) bits |= 1u << PVMMU_FEAT_flag_range_update;
    return bits;
}

HcResult do_xen_version(Hypervisor& hv, Vcpu& v, HypercallFrame& f)
{
    const Vaddr arg{f.arg[1]};
    auto put = [&](const auto& value) { return done(hv.platform().copy_to_guest(v, arg, &value, sizeof(value))); };
    switch (uint32_t(f.arg[0])) {   // an int cmd in Xen's prototype
    case XENVER_version:
        return done(kXenVersion);
    case XENVER_pagesize:
        return done(long(kPageSize));
    case XENVER_extraversion: {
        const xen_extraversion_t s = "-pvmmu";
        return put(s);
    }
    case XENVER_compile_info: {
        const xen_compile_info_t ci{"g++ " __VERSION__, "pvmmu", "", ""};
        return put(ci);
    }
    case XENVER_capabilities: {
        const xen_capabilities_info_t caps = "xen-3.0-x86_64";   // 64-bit PV guests only
        return put(caps);
    }
    case XENVER_changeset: {
        const xen_changeset_info_t cs = "pvmmu";
        return put(cs);
    }
    case XENVER_platform_parameters: {
        const xen_platform_parameters_t pp{HYPERVISOR_VIRT_START};   // the first reserved L4 slot, 256
        return put(pp);
    }
    case XENVER_guest_handle: {
        const xen_domain_handle_t handle = {};   // domains have no UUID (Xen: the toolstack's)
        return put(handle);
    }
    case XENVER_commandline:
    case XENVER_build_id:
        return done(-XEN_EPERM);
    case XENVER_get_features: {
        xen_feature_info_t fi;
        if (hv.platform().copy_from_guest(v, &fi, arg, sizeof(fi))) return done(-XEN_EFAULT);
        if (fi.submap_idx != 0) return done(-XEN_EINVAL);   // Xen has one submap (XENFEAT_NR_SUBMAPS)
        fi.submap = feature_submap0(*v.domain);
        return put(fi);
    }
    default:
        return done(-XEN_ENOSYS);
    }
}

} // namespace pvmmu
