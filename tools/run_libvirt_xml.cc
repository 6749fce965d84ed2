// The domain XML of pvmmu's machine for libvirt (run_libvirt.h). Each
// element stands for one fact learned when booting pvmmu-hv through
// libvirt 9.0: without <acpi/> libvirt adds -no-acpi and pvmmu
// finds one CPU (the MADT is an ACPI table); without seclabel none the DAC
// security driver takes the whole module string of <initrd> for one file
// and the start fails. No isa-debug-exit: libvirt reads its every code as a
// crash, so pvmmu-hv ends such a machine as libvirt understands
// (hypervisor/arch/x86_64/boot/exit.h): ACPI soft-off after the last domain (shut off,
// reason shutdown: <on_poweroff>destroy), a panic or failed boot through
// the <panic model='isa'/> device (crashed, reason panicked: kept by
// <on_crash>preserve, so virsh shows it, until the launcher destroys it).
#include "run_libvirt.h"

#include <atomic>

#include <unistd.h>

namespace pvmmu::run {

namespace {

std::string escaped(const std::string& s)
{
    std::string e;
    for (char c : s) {
        switch (c) {
        case '&': e += "&amp;"; break;
        case '<': e += "&lt;"; break;
        case '>': e += "&gt;"; break;
        case '\'': e += "&apos;"; break;
        case '"': e += "&quot;"; break;
        default: e += c;
        }
    }
    return e;
}

std::string qemu_arg(const std::string& v) { return "    <qemu:arg value='" + escaped(v) + "'/>\n"; }

} // namespace

std::string libvirt_domain_xml(const std::vector<Domain>& doms, const std::string& accel, const std::string& name,
                               const std::string& hv_image, const std::string& serial_log, const std::string& hv_args)
{
    const Machine m = pvmmu_machine(doms);
    std::string x = "<domain type='" + std::string(accel == "kvm" ? "kvm" : "qemu") +
                    "' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>\n";
    x += "  <name>" + escaped(name) + "</name>\n";
    x += "  <memory unit='MiB'>" + std::to_string(m.mib) + "</memory>\n";
    x += "  <vcpu>" + std::to_string(m.cpus) + "</vcpu>\n";
    x += "  <os>\n    <type arch='x86_64' machine='pc'>hvm</type>\n";
    x += "    <kernel>" + escaped(hv_image) + "</kernel>\n";
    x += "    <initrd>" + escaped(pvmmu_modules(doms)) + "</initrd>\n";
    if (!hv_args.empty()) x += "    <cmdline>" + escaped(hv_args) + "</cmdline>\n";
    x += "  </os>\n";
    x += "  <features>\n    <acpi/>\n  </features>\n";
    // The machine ends once; a reset (a triple fault) must not boot it again.
    x += "  <on_poweroff>destroy</on_poweroff>\n  <on_reboot>destroy</on_reboot>\n  <on_crash>preserve</on_crash>\n";
    x += "  <devices>\n";
    x += "    <serial type='pty'>\n";
    if (!serial_log.empty()) x += "      <log file='" + escaped(serial_log) + "' append='off'/>\n";
    x += "      <target port='0'/>\n    </serial>\n";
    x += "    <console type='pty'>\n      <target type='serial' port='0'/>\n    </console>\n";
    x += "    <video>\n      <model type='none'/>\n    </video>\n";
    x += "    <memballoon model='none'/>\n";
    x += "    <panic model='isa'>\n      <address type='isa' iobase='0x505'/>\n    </panic>\n";
    x += "  </devices>\n";
    x += "  <seclabel type='none' model='dac'/>\n";
    if (accel == "tcg-icount")
        x += "  <qemu:commandline>\n" + qemu_arg("-icount") + qemu_arg(kIcountOption) + "  </qemu:commandline>\n";
    x += "</domain>\n";
    return x;
}

std::string libvirt_domain_name(const std::vector<Domain>& doms)
{
    static std::atomic<unsigned> runs{0};
    std::string base = doms.empty() || doms.front().name.empty() ? "domain" : doms.front().name;
    // Letters, digits, '-', '_' and '.' only: the name becomes file names in
    // the driver's folders.
    for (char& c : base) {
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                           c == '_' || c == '.';
        if (!plain) c = '_';
    }
    return "pvmmu-" + base + "-" + std::to_string(getpid()) + "-" + std::to_string(++runs);
}

std::string libvirt_default_uri() { return "qemu:///embed?root=" PVMMU_LIBVIRT_ROOT; }

} // namespace pvmmu::run

namespace pvmmu::run {

const Backend kLibvirt = {"libvirt", 60, 0, "kvm|tcg|tcg-icount", "", nullptr, libvirt_prepare};

} // namespace pvmmu::run
