// The bochs back end: pvmmu's GRUB ISO (tools/make-iso.sh, as `./pvmmu iso`
// makes it) booted by Bochs 2.7 with its Ice Lake (client) CPU model (issue
// 15): an x86 written independently of QEMU's, with one CPU per vCPU as on
// QEMU. Ice Lake, not Skylake-X: it has UMIP besides SMEP, SMAP, NX, PCID and
// 1 GiB pages, so every protection feature pvmmu-hv turns on is on here.
// Bochs does not exit when the hypervisor writes isa-debug-exit, so COM1 is a
// file the launcher follows, and the run ends at the hypervisor's own last
// line: the end of the last domain, a panic or a failed boot check.
#include "run_backend.h"

#include <cstdio>

#include <unistd.h>

namespace pvmmu::run {

namespace {

const char kBios[] = "/usr/share/bochs/BIOS-bochs-latest";
const char kVgaBios[] = "/usr/share/bochs/VGABIOS-lgpl-latest";

bool write_file(const std::string& path, const std::string& text)
{
    FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return false;
    const bool ok = std::fputs(text.c_str(), f) >= 0;
    return std::fclose(f) == 0 && ok;
}

int prepare(const std::vector<Domain>& doms, const Options& o, Launch& l, std::string& why)
{
    if (!on_path("bochs") || access(kBios, R_OK) != 0 || access(kVgaBios, R_OK) != 0) {
        why = "Bochs is not installed (bochs, bochsbios, vgabios: ./pvmmu deps)";
        return kSkipped;
    }
    l.scratch = make_scratch();
    if (l.scratch.empty()) {
        why = "cannot make a folder for the ISO under $TMPDIR";
        return kCrashed;
    }
    const std::string iso = l.scratch + "/pvmmu.iso";
    std::string cmd = quoted(PVMMU_MAKE_ISO) + " --image " + quoted(PVMMU_HV_IMAGE) + " --out " + quoted(iso);
    if (!o.hv_args.empty()) cmd += " --append " + quoted(o.hv_args);   // GRUB's multiboot2 line
    for (const Domain& d : doms) {
        const std::string name = d.name.empty() ? d.kernel.substr(d.kernel.rfind('/') + 1) : d.name;
        // --module: the path whole (KERNEL=STRING would end it at a '=' in it).
        cmd += " --module " + quoted(d.kernel) + " " + quoted(name + " " + module_words(d));
        if (!d.ramdisk.empty()) cmd += " --module " + quoted(d.ramdisk) + " " + quoted(name + "-ramdisk " + kRamdiskWord);
    }
    std::string out;
    const int rc = run_tool(cmd + " 2>&1", out);
    if (rc != 0) {
        why = "tools/make-iso.sh: " + out.substr(out.rfind('\n') + 1);
        return rc == 77 ? kSkipped : kCrashed;
    }
    l.console_file = l.scratch + "/com1";
    const std::string rc_file = l.scratch + "/bochsrc", go = l.scratch + "/go";
    const Machine m = pvmmu_machine(doms);
    const std::string bochsrc =
        "megs: " + std::to_string(m.mib) + "\n"
        "cpu: model=corei7_icelake_u, count=" + std::to_string(m.cpus) + ", ips=100000000\n"
        "romimage: file=" + kBios + "\n"
        "vgaromimage: file=" + kVgaBios + "\n"
        "ata0-master: type=cdrom, path=\"" + iso + "\", status=inserted\n"
        "boot: cdrom\n"
        "com1: enabled=1, mode=file, dev=\"" + l.console_file + "\"\n"
        // Debian's Bochs has no `nogui`; VNC that waits for no client is the quiet one.
        "display_library: rfb, options=\"timeout=0\"\n"
        "speaker: enabled=0\n"
        "sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy\n";
    // Debian's Bochs starts in its debugger: `c` lets the machine run.
    if (!write_file(rc_file, bochsrc) || !write_file(go, "c\n")) {
        why = "cannot write " + rc_file;
        return kCrashed;
    }
    l.args = {"/usr/bin/env", "bochs", "-q", "-f", rc_file, "-rc", go};
    l.endings = kPvmmuEndings;
    return 0;
}

} // namespace

const Backend kBochs = {"bochs", 300, 0, "", "", nullptr, prepare};

} // namespace pvmmu::run
