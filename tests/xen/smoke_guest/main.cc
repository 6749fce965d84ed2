// The smallest guest that runs on both hypervisors (issue 13): booted by Xen
// 4.17 as dom0 (tests/xen/xen_boot_test.sh) and by pvmmu as domain 1, it
// proves that the loader took pvmmu's ELF notes, that the hypercall page
// works and that the guest runs in ring 3, then powers off.
#include "tiny_guest.h"

using namespace tiny;

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    check("console_io write", write("smoke guest: running\n"), 0);
    check("start_info magic", si->magic[0] == 'x' && si->magic[1] == 'e' && si->magic[2] == 'n', 1);
    uint16_t cs;
    asm volatile("mov %%cs, %0" : "=r"(cs));
    check("running on FLAT_RING3_CS64", cs, FLAT_RING3_CS64);
    const long version = hypercall(__HYPERVISOR_xen_version, XENVER_version, 0);
    check("xen_version 4.17", version, 4 << 16 | 17);
    xen_feature_info_t fi{};
    check("XENVER_get_features", hypercall(__HYPERVISOR_xen_version, XENVER_get_features, uint64_t(&fi)), 0);
    check("unknown hypercall", hypercall(63), -XEN_ENOSYS);
    finish("smoke guest");
}
