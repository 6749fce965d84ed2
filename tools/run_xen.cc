// The xen back end: Debian's Xen 4.17 (tools/fetch-xen.sh, never installed)
// under QEMU's TCG with the guest kernel as dom0, the reference
// pvmmu's behaviour is compared with. Xen boots one domain here and knows
// none of pvmmu's module words: dom0's module string carries only the
// domain's `extra` words (start_info.cmd_line), and its ramdisk is the next
// module (dom0's initrd). Xen does not power QEMU off
// ("noreboot": it halts), so the run ends at Xen's report of dom0's end or
// of its own panic.
#include "run_backend.h"

#include <algorithm>

namespace pvmmu::run {

namespace {

// Xen's last lines, each with the status pvmmu's isa-debug-exit gives for
// the same end (Xen's shutdown code prints them).
const std::vector<Ending> kXenEndings = {
    {"(XEN) Hardware Dom0 halted", kPoweroffStatus, 0},   // SCHEDOP_shutdown poweroff
    // A dom0 that powers the machine off through ACPI, as Linux does (Xen
    // enters S5 for it and prints this).
    {"(XEN) Entering ACPI S5 state.", kPoweroffStatus, 0},
    {"(XEN) Hardware Dom0 crashed", kCrashStatus, 0},
    {"(XEN) Hardware Dom0 shutdown", kRebootStatus, 0},   // reboot, suspend, watchdog, ...
    {"(XEN) Panic on CPU", kPanicStatus, 1},              // then its message
};

std::string lacks(const std::vector<Domain>& doms)
{
    for (const Domain& d : doms) {
        if (d.peer_frames) return "needs a second domain (pvmmu's peer=); Xen here boots dom0 alone";
        if (d.deny) return "needs pvmmu's deny= policy (PVMMU_DENY_* features refused), which Xen does not have";
    }
    return "";
}

// dom0's memory in Xen's size syntax: MiB when whole, else KiB.
std::string xen_size(unsigned long frames)
{
    return frames % 256 == 0 ? std::to_string(frames / 256) + "M" : std::to_string(frames * 4) + "K";
}

int prepare(const std::vector<Domain>& doms, const Options& o, Launch& l, std::string& why)
{
    if (!on_path("qemu-system-x86_64")) {
        why = "qemu-system-x86_64 is not installed (./pvmmu deps)";
        return kSkipped;
    }
    std::string image;
    const int rc = run_tool(quoted(PVMMU_FETCH_XEN) + " " + quoted(PVMMU_XEN_DIR), image);
    if (rc == 77) {
        why = "tools/fetch-xen.sh could not fetch xen-hypervisor-4.17-amd64 (above)";
        return kSkipped;
    }
    if (rc != 0 || image.empty()) {
        why = "tools/fetch-xen.sh " PVMMU_XEN_DIR " failed (exit " + std::to_string(rc) + ")";
        return kCrashed;
    }
    const Domain& d = doms.front();
    const std::string vcpus = std::to_string(d.vcpus);
    // Xen keeps about 128 MiB for itself beyond dom0's memory.
    const unsigned long mib = std::max(512ul, d.frames / 256 + 256);
    // Xen's dom0 gets the module after its kernel as its initial module
    // (start_info's mod_start), as pvmmu's domain gets its ramdisk module.
    std::string modules = initrd_escaped(d.extra.empty() ? d.kernel : d.kernel + " " + d.extra);
    if (!d.ramdisk.empty()) modules += "," + initrd_escaped(d.ramdisk);
    l.args = qemu_command(o.accel.empty() ? "tcg" : o.accel, d.vcpus, mib, image, modules,
                          o.cpu.empty() ? "max" : o.cpu);
    l.args.insert(l.args.end(), {"-append",
                                 "console=com1 noreboot dom0_mem=" + xen_size(d.frames) + " dom0_max_vcpus=" +
                                 vcpus + " loglvl=all guest_loglvl=all"});
    l.endings = kXenEndings;
    l.takes_input = true;   // COM1 is -serial stdio: Xen's console
    return 0;
}

} // namespace

const Backend kXen = {"xen", 60, 1, "tcg|tcg-icount", " (Xen 4.17 dies on nested KVM)", lacks, prepare};

} // namespace pvmmu::run
