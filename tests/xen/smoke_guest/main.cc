// The smallest guest that runs on both hypervisors: booted by Xen
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

    // The command line is the kernel's words only: pvmmu's own
    // module words never reach it. With "hello=world" among the words, the
    // line must be exactly that (qemu_guest_smoke passes it with pvmmu's words).
    const char* cmdline = reinterpret_cast<const char*>(si->cmd_line);
    write("smoke guest: cmdline \"");
    write(cmdline);
    write("\"\n");
    static const char* const kHypervisorWords[] = {"vcpus=", "frames=", "deny=", "peer=", "unsafe-native-pt"};
    for (const char* w : kHypervisorWords)
        check("no hypervisor word on the command line", has_word(si, w), 0);
    if (has_word(si, "hello=world")) {
        const char kWant[] = "hello=world";
        size_t n = 0;
        while (cmdline[n] && n < sizeof(kWant) && cmdline[n] == kWant[n]) ++n;
        check("  the command line is exactly the kernel's word", n == sizeof(kWant) - 1 && !cmdline[n], 1);
    }

    // The xen_version sub-ops every guest may ask, which must
    // agree on both hypervisors.
    xen_extraversion_t extra;
    check("XENVER_extraversion", hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, uint64_t(&extra)), 0);
    const bool on_pvmmu = extra[0] == '-' && extra[1] == 'p';
    write(on_pvmmu ? "smoke guest: on pvmmu\n" : "smoke guest: on Xen\n");
    static xen_capabilities_info_t caps;
    check("XENVER_capabilities", hypercall(__HYPERVISOR_xen_version, XENVER_capabilities, uint64_t(caps)), 0);
    const char kCaps[] = "xen-3.0-x86_64";
    for (unsigned i = 0; i + 1 < sizeof(kCaps); ++i) check("  starts with xen-3.0-x86_64", caps[i], kCaps[i]);
    xen_platform_parameters_t pp{};
    check("XENVER_platform_parameters",
          hypercall(__HYPERVISOR_xen_version, XENVER_platform_parameters, uint64_t(&pp)), 0);
    check("  virt_start at L4 slot 256", pp.virt_start == 0xffff800000000000ull, 1);
    static xen_compile_info_t ci;
    check("XENVER_compile_info", hypercall(__HYPERVISOR_xen_version, XENVER_compile_info, uint64_t(&ci)), 0);
    static xen_changeset_info_t changeset;
    check("XENVER_changeset", hypercall(__HYPERVISOR_xen_version, XENVER_changeset, uint64_t(changeset)), 0);
    xen_domain_handle_t handle;
    check("XENVER_guest_handle", hypercall(__HYPERVISOR_xen_version, XENVER_guest_handle, uint64_t(handle)), 0);
    // Xen gives its command line to dom0, a privileged domain; pvmmu has none.
    static xen_commandline_t line;
    check("XENVER_commandline", hypercall(__HYPERVISOR_xen_version, XENVER_commandline, uint64_t(line)),
          on_pvmmu ? -XEN_EPERM : 0);
    finish("smoke guest");
}
