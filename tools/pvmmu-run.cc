// pvmmu-run: runs guest programs and reports their outcome (docs/design.md §6, the Xen
// Test Framework's runner). Each program runs as a child process with its
// console captured and echoed; the last console line must be
// `Test result: SUCCESS|SKIP|ERROR|FAILURE`, mapped to the exit codes 0/3/4/5.
// A program that crashes, prints no result, ends with a status other than its
// result's, or outlives --timeout gives 6 (it is killed, so a hung guest never
// hangs the runner). Several programs: the worst code. Usage errors: 2.
// --platform sim runs the test's sim program; qemu, xen and bochs are back
// ends (run_backend.h) booting its guest kernel (guest/platform/xenpv): on
// pvmmu under QEMU, on Xen 4.17 under QEMU, on pvmmu from its ISO under
// Bochs. They share the domain list and the judgement (run_child.cc).
// --fuzz boots the hostile guest (tests/qemu/hostile_guest) from a seed next
// to a well-behaved guest program and judges the run by the console
// (docs/security.md §7.10).
//
// The tool's files: run_args.cc (the command line), run_usage.cc (--help),
// run_programs.cc (the guest programs), run_launch.cc (a launch on a back end
// and its verdict), run_configs.cc (--config), run_fuzz.cc (--fuzz); this file
// checks the options against each other and runs the programs named.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kvm_probe.h"
#include "run_cli.h"
#include "run_libvirt.h"

namespace pvmmu::run {

// --kvm-self-test: the verdict the qemu platform's default accelerator
// follows (kvm_probe.h), as a line and an exit status.
int kvm_self_test_command()
{
    if (!kvm_usable()) {
        std::printf("pvmmu-run: /dev/kvm is not usable here: KVM cannot run pvmmu\n");
        return kSkipped;
    }
    const KvmVerdict v = kvm_self_test(PVMMU_KVM_PROBE_IMAGE, PVMMU_KVM_VERDICT);
    std::printf("pvmmu-run: /dev/kvm %s: %s\n", describe(v).c_str(),
                v.result == KvmProbe::Passed ? "KVM runs pvmmu here" : "the qemu platform uses TCG by default");
    return v.result == KvmProbe::Passed ? 0 : kSkipped;
}

} // namespace pvmmu::run

using namespace pvmmu::run;

int main(int argc, char** argv)
{
    catch_interrupts();
    CommandLine cli = parse_args(argc, argv);
    if (cli.exit_code >= 0) return cli.exit_code;
    RunOptions& o = cli.run;
    const Backend* backend = backend_of(o.platform);
    if (o.platform != "sim" && !backend) {
        std::fprintf(stderr, "pvmmu-run: no platform '%s'; there are sim, qemu, xen, xen-host, bochs and libvirt\n", o.platform.c_str());
        return 2;
    }
    // --accel: what the platform's emulator takes (sim and --fuzz: QEMU's).
    const Backend& accel_of = backend ? *backend : kQemu;
    if (!o.accel.empty() && ("|" + std::string(accel_of.accels) + "|").find("|" + o.accel + "|") == std::string::npos) {
        if (*accel_of.accels)
            std::fprintf(stderr, "pvmmu-run: --platform %s takes --accel %s%s\n", accel_of.name, accel_of.accels,
                         accel_of.accel_note);
        else
            std::fprintf(stderr, "pvmmu-run: --platform %s takes no --accel\n", accel_of.name);
        return 2;
    }
    // --cpu: only the back ends that start QEMU themselves (--fuzz is qemu's).
    if (!o.cpu.empty() && backend != &kQemu && backend != &kXen && !(!backend && o.fuzz.on)) {
        std::fprintf(stderr, "pvmmu-run: --cpu is for --platform qemu and xen\n");
        return 2;
    }
    if (backend && !o.timeout_set) o.timeout_s = backend->default_timeout_s;
    if (!cli.print_xml.empty()) {
        const Program* p = find(cli.print_xml);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", cli.print_xml.c_str());
            return 2;
        }
        const std::string accel = pick_accel(o.accel).accel;
        std::fputs(libvirt_domain_xml({domain_of(*p, info_of(*p), o)}, accel.empty() ? "tcg" : accel, "pvmmu-" + cli.print_xml, PVMMU_HV_IMAGE, "",
                                      o.hv_args).c_str(), stdout);
        return 0;
    }
    if (cli.describe_host) {
        if (backend != &kLibvirt || !o.names.empty() || !o.configs.empty()) {
            std::fprintf(stderr, "pvmmu-run: --describe-host goes with --platform libvirt[=URI] alone\n");
            return 2;
        }
        std::string why;
        const int code = libvirt_describe_host(o, why);
        if (code) std::fprintf(stderr, "pvmmu-run: --describe-host: %s\n", why.c_str());
        return code;
    }
    if (!cli.boot_args.empty()) {
        const Program* p = find(cli.boot_args);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", cli.boot_args.c_str());
            return 2;
        }
        std::printf("%s\n%s\n", p->kernel, module_words(domain_of(*p, info_of(*p), o)).c_str());
        return 0;
    }
    if (o.fuzz.on) {
        if (!o.names.empty() || !o.configs.empty() || cli.list) {
            std::fprintf(stderr, "pvmmu-run: --fuzz takes no program names, --config or --list\n");
            return 2;
        }
        if (backend && backend != &kQemu) {
            std::fprintf(stderr, "pvmmu-run: --fuzz runs on --platform qemu only\n");
            return 2;
        }
        return run_fuzz(o);
    }
    const bool fuzz_option = o.fuzz.seed_set || o.fuzz.ops || o.fuzz.time_s || o.fuzz.check != 1000 ||
                             o.fuzz.trace_set || !o.fuzz.edges || o.fuzz.with != "tlb-shootdown";
    if (fuzz_option) {
        std::fprintf(stderr, "pvmmu-run: --seed, --ops, --time, --check, --trace, --no-edges and --with go with --fuzz\n");
        return 2;
    }
    if (!o.configs.empty()) {
        if (!o.names.empty()) {
            std::fprintf(stderr, "pvmmu-run: --config and program names do not mix\n");
            return 2;
        }
        return run_configs(o);
    }
    if (cli.list) {
        for (const Program& p : programs()) std::printf("%-28s %s\n", p.name, info_of(p).title.c_str());
        return 0;
    }
    if (o.names.empty()) {
        usage(stderr);
        return 2;
    }
    for (const auto& n : o.names) {
        if (!find(n)) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", n.c_str());
            return 2;
        }
    }

    int worst = 0;
    for (const auto& n : o.names) {
        const Program& p = *find(n);
        std::string why;
        const auto t0 = std::chrono::steady_clock::now();
        int code;
        if (backend) {
            const TestInfo t = info_of(p);
            why = x86_lacks(t);
            code = why.empty() ? launch(*backend, {domain_of(p, t, o)}, o, true, why) : kSkipped;
        } else {
            Launch l;
            l.args = {p.path};
            if (!o.cpus.empty()) l.args.insert(l.args.end(), {"--cpus", o.cpus});
            code = run_child(l, o, -1, true, why);
        }
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("pvmmu-run: %s: %s (exit %d) in %.1f s%s%s\n", n.c_str(), word_of(code), code, s,
                    why.empty() ? "" : ": ", printable(why).c_str());
        std::fflush(stdout);
        if (code > worst) worst = code;
        if (code >= kInterruptedBase) break;   // the run was ended: no more programs
    }
    return worst;
}
