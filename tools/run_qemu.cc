// The qemu back end: pvmmu's bare-metal hypervisor under qemu-system-x86_64
// with each domain's guest kernel as a Multiboot module; QEMU's exit status
// carries the last domain's shutdown reason (isa-debug-exit, docs/boot.md
// "Exit codes"). Also the QEMU command line the xen back end shares.
#include "run_backend.h"

#include <cstdio>

#include <unistd.h>

#include "kvm_probe.h"

namespace pvmmu::run {

std::string module_words(const Domain& d)
{
    std::string w = "vcpus=" + std::to_string(d.vcpus) + " frames=" + std::to_string(d.frames);
    if (d.deny) {
        char hex[32];
        std::snprintf(hex, sizeof(hex), " deny=%#lx", d.deny);
        w += hex;
    }
    if (d.peer_frames) w += " peer=" + std::to_string(d.peer_frames);
    if (d.max_grant_frames >= 0) w += " max_grant_frames=" + std::to_string(d.max_grant_frames);
    if (d.max_maptrack_frames >= 0) w += " max_maptrack_frames=" + std::to_string(d.max_maptrack_frames);
    return d.extra.empty() ? w : w + " " + d.extra;
}

Machine pvmmu_machine(const std::vector<Domain>& doms)
{
    Machine m;
    unsigned long frames = 0;
    for (const Domain& d : doms) {
        m.cpus += d.vcpus + (d.peer_frames ? 1 : 0);
        frames += d.frames + d.peer_frames;
    }
    // Each domain's grant table (a peer has none).
    m.mib += frames * 4096 / (1024 * 1024) + doms.size() * HV_GRANT_MIB;
    return m;
}

std::string initrd_escaped(const std::string& s)
{
    std::string e;
    for (char ch : s) {
        e += ch;
        if (ch == ',') e += ',';
    }
    return e;
}

std::vector<std::string> qemu_command(const std::string& accel, unsigned long cpus, unsigned long mib,
                                      const std::string& kernel, const std::string& modules, const std::string& cpu)
{
    const bool icount = accel == "tcg-icount";
    std::vector<std::string> args = {"/usr/bin/env", "qemu-system-x86_64", "-accel", icount ? "tcg" : accel,
            "-cpu", !cpu.empty() ? cpu : accel == "kvm" ? kKvmCpu : kTcgCpu, "-machine", kQemuMachine, "-smp", std::to_string(cpus), "-m", std::to_string(mib), "-kernel", kernel,
            "-initrd", modules, "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot"};
    // Every instruction takes 1 ns of virtual time (the TSC and the PIT follow
    // it), so the guest's clock counts instructions; idle time is skipped.
    if (icount) args.insert(args.end(), {"-icount", kIcountOption});
    return args;
}

std::string pvmmu_modules(const std::vector<Domain>& doms)
{
    std::string modules;
    for (const Domain& d : doms) {
        if (!modules.empty()) modules += ",";
        modules += initrd_escaped(d.kernel + " " + module_words(d));
        if (!d.ramdisk.empty()) modules += "," + initrd_escaped(d.ramdisk + " " + kRamdiskWord);
    }
    return modules;
}

std::vector<size_t> kernel_modules(const std::vector<Domain>& doms)
{
    std::vector<size_t> at;
    size_t next = 0;
    for (const Domain& d : doms) {
        at.push_back(next);
        next += d.ramdisk.empty() ? 1 : 2;
    }
    return at;
}

bool kvm_usable() { return access("/dev/kvm", R_OK | W_OK) == 0; }

AccelChoice pick_accel(const std::string& asked)
{
    const AccelChoice a = choose_accel(asked, kvm_usable(), [] {
        return kvm_self_test(PVMMU_KVM_PROBE_IMAGE, PVMMU_KVM_VERDICT);
    });
    // Once per launcher run, not once per program.
    static bool said = false;
    if (!a.note.empty() && !said) std::fprintf(stderr, "pvmmu-run: %s\n", a.note.c_str());
    said = true;
    return a;
}

const std::vector<Ending> kPvmmuEndings = {
    {"pvmmu: no domain left running; ending", -1, 0},   // names its isa-debug-exit code
    {"PANIC: cpu ", kPanicStatus, 0},
    {"pvmmu: FAILED: ", kFailedStatus, 0},
};

namespace {

int prepare(const std::vector<Domain>& doms, const Options& o, Launch& l, std::string& why)
{
    if (!on_path("qemu-system-x86_64")) {
        why = "qemu-system-x86_64 is not installed (./pvmmu deps)";
        return kSkipped;
    }
    const AccelChoice a = pick_accel(o.accel);
    if (a.accel.empty()) {
        why = a.note;   // --accel kvm-qualified where KVM does not qualify
        return kSkipped;
    }
    const std::string& accel = a.accel;
    const Machine m = pvmmu_machine(doms);
    l.args = qemu_command(accel, m.cpus, m.mib, PVMMU_HV_IMAGE, pvmmu_modules(doms), o.cpu);
    l.args.insert(l.args.end(), {"-device", kIsaDebugExit});
    l.takes_input = true;   // COM1 is -serial stdio
    if (!o.hv_args.empty()) l.args.insert(l.args.end(), {"-append", o.hv_args});
    return 0;
}

} // namespace

const Backend kQemu = {"qemu", 60, 0, "kvm|tcg|tcg-icount|kvm-qualified", "", nullptr, prepare};

} // namespace pvmmu::run
