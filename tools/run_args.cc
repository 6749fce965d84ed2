// pvmmu-run's command line: each option into the run's options; a usage
// error (exit code 2) names the option and what it takes.
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "run_cli.h"

namespace pvmmu::run {

CommandLine parse_args(int argc, char** argv)
{
    CommandLine c;
    RunOptions& o = c.run;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* what) -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "pvmmu-run: %s needs a value (see --help)\n", what);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-h" || a == "--help") {
            usage(stdout);
            c.exit_code = 0;
            return c;
        } else if (a == "--list") {
            c.list = true;
        } else if (a == "--describe-host") {
            c.describe_host = true;
        } else if (a == "--pool") {
            o.pool = value("--pool");
        } else if (a == "--kvm-self-test") {
            c.exit_code = kvm_self_test_command();
            return c;
        } else if (a == "--boot-args") {
            c.boot_args = value("--boot-args");
        } else if (a == "--print-xml") {
            c.print_xml = value("--print-xml");
        } else if (a == "--cpu") {
            o.cpu = value("--cpu");
        } else if (a == "--hv-args") {
            o.hv_args = value("--hv-args");
        } else if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else if (a == "--console" || a == "-c") {
            o.console_input = true;
        } else if (a == "--platform") {
            o.platform = value("--platform");
            // libvirt=URI: the platform and its connection.
            if (const size_t eq = o.platform.find('='); eq != std::string::npos) {
                o.platform_arg = o.platform.substr(eq + 1);
                o.platform.resize(eq);
                if (o.platform != "libvirt" || o.platform_arg.empty()) {
                    std::fprintf(stderr, "pvmmu-run: only --platform libvirt takes '=ARG' (a URI)\n");
                    c.exit_code = 2;
                    return c;
                }
            }
        } else if (a == "--accel") {
            o.accel = value("--accel");
        } else if (a == "--config") {
            o.configs.push_back(value("--config"));
        } else if (a == "--fuzz") {
            o.fuzz.on = true;
        } else if (a == "--seed" || a == "--ops" || a == "--time" || a == "--check" || a == "--trace") {
            const std::string v = value(a.c_str());
            char* end = nullptr;
            errno = 0;
            const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
            if (v.empty() || *end || errno || v[0] == '-' || (n == 0 && a != "--seed" && a != "--trace")) {
                std::fprintf(stderr, "pvmmu-run: %s takes a %s number\n", a.c_str(),
                             a == "--seed" || a == "--trace" ? "non-negative" : "positive");
                c.exit_code = 2;
                return c;
            }
            if (a == "--seed") o.fuzz.seed = n, o.fuzz.seed_set = true;
            else if (a == "--ops") o.fuzz.ops = n;
            else if (a == "--time") o.fuzz.time_s = n;
            else if (a == "--check") o.fuzz.check = n;
            else o.fuzz.trace = n, o.fuzz.trace_set = true;
        } else if (a == "--no-edges") {
            o.fuzz.edges = false;
        } else if (a == "--with") {
            o.fuzz.with = value("--with");
        } else if (a == "--cpus") {
            o.cpus = value("--cpus");
            char* end = nullptr;
            const unsigned long n = std::strtoul(o.cpus.c_str(), &end, 10);
            if (*end || n == 0 || n > 64) {
                std::fprintf(stderr, "pvmmu-run: --cpus takes 1..64\n");
                c.exit_code = 2;
                return c;
            }
        } else if (a == "--timeout") {
            const std::string t = value("--timeout");
            char* end = nullptr;
            o.timeout_s = std::strtod(t.c_str(), &end);
            o.timeout_set = true;
            if (*end || o.timeout_s <= 0) {
                std::fprintf(stderr, "pvmmu-run: --timeout takes a positive number of seconds\n");
                c.exit_code = 2;
                return c;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "pvmmu-run: unknown option '%s' (see --help)\n", a.c_str());
            c.exit_code = 2;
            return c;
        } else if (a == "all") {
            for (const Program& p : programs()) o.names.push_back(p.name);
        } else {
            o.names.push_back(a);
        }
    }
    return c;
}

} // namespace pvmmu::run
