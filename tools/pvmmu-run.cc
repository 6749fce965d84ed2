// pvmmu-run: runs guest programs and reports their outcome (SPEC §6, the Xen
// Test Framework's runner). Each program runs as a child process with its
// console captured and echoed; the last console line must be
// `Test result: SUCCESS|SKIP|ERROR|FAILURE`, mapped to the exit codes 0/3/4/5.
// A program that crashes, prints no result, exits with a status other than its
// result's, or outlives --timeout gives 6 (it is killed, so a hung guest never
// hangs the runner). Several programs: the worst code. Usage errors: 2.
// --platform qemu boots the bare-metal hypervisor under QEMU with the test's
// guest kernel (guest/platform/xenpv) as a Multiboot module; QEMU's exit
// status carries the domain's shutdown reason (docs/boot.md "Exit codes").
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "xl_config.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

struct Program {
    const char* name;
    const char* path;     // the sim program
    const char* kernel;   // the guest kernel for the bare-metal hypervisor
};

const Program kPrograms[] = {
#include "pvmmu-run-programs.inc"
};

constexpr int kCrashed = 6;

// QEMU's exit status when the last domain shut down with SHUTDOWN_poweroff
// (isa-debug-exit code 0x20: status (0x20 << 1) | 1; boot_defs.h).
constexpr int kQemuPoweroff = 65;

struct Options {
    std::string platform = "sim";
    std::string accel;  // qemu: kvm or tcg; empty: kvm when /dev/kvm is usable
    std::string cpus;   // empty: the program's default
    double timeout_s = 60;
    bool quiet = false;
    std::vector<std::string> names;
    std::vector<std::string> configs;   // --config: xl.cfg files, one domain each
};

void usage(FILE* f)
{
    std::fprintf(f,
        "usage: pvmmu-run [--platform sim|qemu] [--accel kvm|tcg|tcg-icount] [--cpus N] [--timeout SECONDS]\n"
        "                 [--quiet] NAME...\n"
        "       pvmmu-run [--accel kvm|tcg|tcg-icount] [--timeout SECONDS] [--quiet] --config FILE...\n"
        "       pvmmu-run --list\n"
        "       pvmmu-run [--cpus N] --boot-args NAME\n"
        "\n"
        "Runs the guest programs NAME... (guest/tests/<NAME>/) one after the other and\n"
        "exits with the worst outcome:\n"
        "  0 SUCCESS, 3 SKIP, 4 ERROR (the test is broken), 5 FAILURE (what it tests is),\n"
        "  6 crashed, timed out, printed no `Test result:` line last, or exited with\n"
        "    another status than that line's; 2 usage error.\n"
        "\n"
        "  --platform P     where the guest runs: `sim` (the simulated machine, default) or\n"
        "                   `qemu` (the bare-metal hypervisor under qemu-system-x86_64, one\n"
        "                   CPU per vCPU; a test's policy and second domain become the\n"
        "                   module words deny= and peer=; tests needing a TLB or walker\n"
        "                   property x86 lacks skip)\n"
        "  --accel A        qemu: kvm, tcg, or tcg-icount: TCG with -icount shift=0, where\n"
        "                   every guest instruction takes 1 ns of virtual time, so the\n"
        "                   guest's clock counts instructions (deterministic; the vCPUs\n"
        "                   take turns on one host thread). Default: kvm when /dev/kvm\n"
        "                   is usable, else tcg\n"
        "  --cpus N         vCPUs of the guest's domain (default: the test's own)\n"
        "  --timeout S      kill a program after S seconds (default 60)\n"
        "  --quiet          do not echo the guest console, only one line per program\n"
        "  --config FILE    boot the domains described by xl.cfg files (Xen's syntax, read\n"
        "                   with libxlutil: name, vcpus, memory in MiB, kernel = a guest\n"
        "                   kernel or a guest program's name, extra = more module words)\n"
        "                   together on the bare-metal hypervisor, one CPU per vCPU;\n"
        "                   exit 0 when the last domain powers off (or by the last\n"
        "                   `Test result:` line, if one is printed), else 6\n"
        "  --list           list the programs with their titles\n"
        "  --boot-args NAME print the guest kernel of NAME for the bare-metal hypervisor\n"
        "                   and, on a second line, the words its module string carries\n"
        "                   after the path when --platform qemu boots it (vcpus=N\n"
        "                   frames=F [deny=BITS] [peer=F]); ./pvmmu iso uses them\n"
        "  NAME may be `all` for every program.\n");
}

const Program* find(const std::string& name)
{
    for (const Program& p : kPrograms)
        if (name == p.name) return &p;
    return nullptr;
}

int code_of(const std::string& last)
{
    static const struct {
        const char* word;
        int code;
    } kResults[] = {{"SUCCESS", 0}, {"SKIP", 3}, {"ERROR", 4}, {"FAILURE", 5}};
    const std::string prefix = "Test result: ";
    if (last.compare(0, prefix.size(), prefix) != 0) return kCrashed;
    const std::string word = last.substr(prefix.size());
    for (const auto& r : kResults)
        if (word == r.word) return r.code;
    return kCrashed;
}

// Runs argv with stdout+stderr captured; echo (unless quiet) and keep the last
// line (on qemu: the last `Test result:` line, the hypervisor reports the
// shutdown after it). `expect_status`: the exit status that goes with a
// result (-1: the result's own code, as a sim program exits). A run that need
// not print a result (--config, several domains) is judged by expect_status
// and the worst `Test result:` line, if any. Returns the exit code by the
// rules above; `why` explains a 6.
int run_one(const std::vector<std::string>& args, const Options& o, int expect_status, bool need_result,
            std::string& why)
{
    int fds[2];
    if (pipe(fds) != 0) {
        why = std::string("pipe: ") + std::strerror(errno);
        return kCrashed;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        why = std::string("fork: ") + std::strerror(errno);
        return kCrashed;
    }
    if (pid == 0) {
        setpgid(0, 0);   // its own process group, so a kill reaches every thread and child
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        std::fprintf(stderr, "pvmmu-run: cannot execute %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
    std::string line, last;
    int worst = 0;   // of every `Test result:` line
    bool timed_out = false;
    char buf[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        pollfd p{fds[0], POLLIN, 0};
        const int r = poll(&p, 1, int(left.count() > 1000 ? 1000 : left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        const ssize_t n = read(fds[0], buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;   // EOF: the program (and its threads) are gone
        for (ssize_t i = 0; i < n; ++i) {
            if (buf[i] == '\r') continue;   // the serial console's line ends
            if (buf[i] != '\n') {
                line += buf[i];
                continue;
            }
            if (!o.quiet) std::printf("%s\n", line.c_str());
            if (expect_status < 0 || line.rfind("Test result: ", 0) == 0) last = line;
            if (line.rfind("Test result: ", 0) == 0 && code_of(line) > worst) worst = code_of(line);
            line.clear();
        }
        std::fflush(stdout);
    }
    if (!line.empty()) {   // an unterminated last line still counts as the last line
        if (!o.quiet) std::printf("%s\n", line.c_str());
        last = line;
    }
    if (timed_out) kill(-pid, SIGKILL);
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        why = "timed out after " + std::to_string(int(o.timeout_s)) + " s";
        return kCrashed;
    }
    if (WIFSIGNALED(status)) {
        why = std::string("killed by signal ") + strsignal(WTERMSIG(status));
        return kCrashed;
    }
    if (!need_result && WIFEXITED(status) && WEXITSTATUS(status) == expect_status) return worst;
    const int code = code_of(last);
    if (code == kCrashed) {
        why = "no `Test result:` line at the end of the console";
        return code;
    }
    // A sim program exits with its result's code; anything else happened after
    // the result line (a crash in teardown, a sanitizer's report at exit). On
    // qemu the domain must have powered off after its result.
    const int want = expect_status < 0 ? code : expect_status;
    if (WIFEXITED(status) && WEXITSTATUS(status) != want) {
        why = "exit status " + std::to_string(WEXITSTATUS(status)) + " after `" + last + "`";
        return kCrashed;
    }
    return code;
}

// What a test asks of its platform (TestConfig), as its sim program's
// --info prints it.
struct TestInfo {
    std::string title;
    unsigned cpus = 1;
    unsigned long frames = 4096;
    unsigned long deny = 0;
    bool second_domain = false;
    unsigned long second_domain_frames = 0;   // its size, as the sim gives it
    bool tlb_caches_invalid = false, coherent_walker = true;
};

TestInfo info_of(const Program& p)
{
    std::string cmd = std::string("'") + p.path + "' --info 2>/dev/null";
    TestInfo t;
    FILE* f = popen(cmd.c_str(), "r");
    if (!f) return t;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f)) {
        std::string l = buf;
        if (!l.empty() && l.back() == '\n') l.pop_back();
        auto value = [&](const char* key) -> const char* {
            const size_t n = std::strlen(key);
            return l.compare(0, n, key) == 0 ? l.c_str() + n : nullptr;
        };
        if (const char* v = value("title: ")) t.title = v;
        if (const char* v = value("cpus: ")) t.cpus = unsigned(std::strtoul(v, nullptr, 0));
        if (const char* v = value("frames: ")) t.frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("deny: ")) t.deny = std::strtoul(v, nullptr, 0);
        if (const char* v = value("second_domain: ")) t.second_domain = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("second_domain_frames: ")) t.second_domain_frames = std::strtoul(v, nullptr, 0);
        if (const char* v = value("tlb_caches_invalid: ")) t.tlb_caches_invalid = std::strtoul(v, nullptr, 0) != 0;
        if (const char* v = value("coherent_walker: ")) t.coherent_walker = std::strtoul(v, nullptr, 0) != 0;
    }
    pclose(f);
    return t;
}

bool kvm_usable() { return access("/dev/kvm", R_OK | W_OK) == 0; }

// A domain for the bare-metal hypervisor: a Multiboot module whose string
// carries its size, vCPU count, policy and peer (docs/abi.md §10).
struct QemuDomain {
    std::string kernel, extra;
    unsigned long vcpus = 1, frames = 4096;
    unsigned long deny = 0;         // deny=: PVMMU_DENY_* bits, applied before it starts
    unsigned long peer_frames = 0;  // peer=: an idle second domain of that size (0: none)
};

// The words of a domain's module string after the kernel's path. Also what
// `./pvmmu iso` puts on its module2 line (--boot-args).
std::string module_words(const QemuDomain& d)
{
    std::string w = "vcpus=" + std::to_string(d.vcpus) + " frames=" + std::to_string(d.frames);
    if (d.deny) {
        char hex[32];
        std::snprintf(hex, sizeof(hex), " deny=%#lx", d.deny);
        w += hex;
    }
    if (d.peer_frames) w += " peer=" + std::to_string(d.peer_frames);
    return d.extra.empty() ? w : w + " " + d.extra;
}

// A guest program's domain: the test's size, vCPUs (or --cpus), policy and
// second domain.
QemuDomain domain_of(const Program& p, const TestInfo& t, const Options& o)
{
    QemuDomain d;
    d.kernel = p.kernel;
    d.vcpus = o.cpus.empty() ? t.cpus : unsigned(std::strtoul(o.cpus.c_str(), nullptr, 10));
    d.frames = t.frames;
    d.deny = t.deny;
    d.peer_frames = t.second_domain ? t.second_domain_frames : 0;
    return d;
}

// The QEMU command that boots the hypervisor with these domains: one CPU per
// vCPU (a peer's included: it never runs, but its CPU exists, as on the sim),
// the hypervisor's own memory and the domains', with room to spare.
std::vector<std::string> qemu_args(const std::vector<QemuDomain>& doms, const Options& o)
{
    unsigned long cpus = 0, frames = 0;
    std::string modules;
    for (const QemuDomain& d : doms) {
        cpus += d.vcpus + (d.peer_frames ? 1 : 0);
        frames += d.frames + d.peer_frames;
        if (!modules.empty()) modules += ",";
        // -initrd separates modules with ',': one inside a module string
        // (modes=a,b in `extra`) is written ',,' (QEMU's option escaping).
        for (char ch : d.kernel + " " + module_words(d)) {
            modules += ch;
            if (ch == ',') modules += ',';
        }
    }
    const std::string accel = o.accel.empty() ? (kvm_usable() ? "kvm" : "tcg") : o.accel;
    const bool icount = accel == "tcg-icount";
    std::vector<std::string> args = {"/usr/bin/env", "qemu-system-x86_64", "-accel", icount ? "tcg" : accel,
            "-machine", "pc", "-smp", std::to_string(cpus), "-m", std::to_string(128 + frames * 4096 / (1024 * 1024)),
            "-kernel", PVMMU_HV_IMAGE, "-initrd", modules,
            "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"};
    // Every instruction takes 1 ns of virtual time (the TSC and the PIT follow
    // it), so the guest's clock counts instructions; idle time is skipped.
    if (icount) args.insert(args.end(), {"-icount", "shift=0,sleep=off"});
    return args;
}

const char* word_of(int code);

// --config: every file one domain, all booted together.
int run_configs(const Options& o)
{
    std::vector<QemuDomain> doms;
    for (const std::string& path : o.configs) {
        pvmmu::run::DomainConfig c;
        std::string err;
        if (!pvmmu::run::read_xl_config(path, c, err)) {
            std::fprintf(stderr, "pvmmu-run: %s\n", err.c_str());
            return 2;
        }
        QemuDomain d;
        d.kernel = find(c.kernel) ? find(c.kernel)->kernel : c.kernel;
        if (d.kernel.find_first_of(", ") != std::string::npos || access(d.kernel.c_str(), R_OK) != 0) {
            std::fprintf(stderr, "pvmmu-run: %s: kernel '%s': not a guest program, nor a readable file "
                                 "without ',' or ' ' in its path\n", path.c_str(), c.kernel.c_str());
            return 2;
        }
        d.extra = c.extra;
        d.vcpus = unsigned(c.vcpus);
        d.frames = static_cast<unsigned long>(c.memory) * 256;
        std::printf("pvmmu-run: domain %zu: %s: kernel %s, %ld vCPUs, %ld MiB\n", doms.size() + 1,
                    c.name.c_str(), d.kernel.c_str(), c.vcpus, c.memory);
        doms.push_back(d);
    }
    std::string why;
    const int code = run_one(qemu_args(doms, o), o, kQemuPoweroff, false, why);
    std::printf("pvmmu-run: %s (exit %d)%s%s\n", word_of(code), code, why.empty() ? "" : ": ", why.c_str());
    return code;
}

const char* word_of(int code)
{
    switch (code) {
    case 0: return "SUCCESS";
    case 3: return "SKIP";
    case 4: return "ERROR";
    case 5: return "FAILURE";
    default: return "CRASHED";
    }
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    bool list = false;
    std::string boot_args;
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
            return 0;
        } else if (a == "--list") {
            list = true;
        } else if (a == "--boot-args") {
            boot_args = value("--boot-args");
        } else if (a == "--quiet" || a == "-q") {
            o.quiet = true;
        } else if (a == "--platform") {
            o.platform = value("--platform");
        } else if (a == "--accel") {
            o.accel = value("--accel");
        } else if (a == "--config") {
            o.configs.push_back(value("--config"));
        } else if (a == "--cpus") {
            o.cpus = value("--cpus");
            char* end = nullptr;
            const unsigned long n = std::strtoul(o.cpus.c_str(), &end, 10);
            if (*end || n == 0 || n > 64) {
                std::fprintf(stderr, "pvmmu-run: --cpus takes 1..64\n");
                return 2;
            }
        } else if (a == "--timeout") {
            const std::string t = value("--timeout");
            char* end = nullptr;
            o.timeout_s = std::strtod(t.c_str(), &end);
            if (*end || o.timeout_s <= 0) {
                std::fprintf(stderr, "pvmmu-run: --timeout takes a positive number of seconds\n");
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "pvmmu-run: unknown option '%s' (see --help)\n", a.c_str());
            return 2;
        } else if (a == "all") {
            for (const Program& p : kPrograms) o.names.push_back(p.name);
        } else {
            o.names.push_back(a);
        }
    }
    if (o.platform != "sim" && o.platform != "qemu") {
        std::fprintf(stderr, "pvmmu-run: no platform '%s'; there are 'sim' and 'qemu'\n", o.platform.c_str());
        return 2;
    }
    if (!o.accel.empty() && o.accel != "kvm" && o.accel != "tcg" && o.accel != "tcg-icount") {
        std::fprintf(stderr, "pvmmu-run: --accel takes kvm, tcg or tcg-icount\n");
        return 2;
    }
    if (!boot_args.empty()) {
        const Program* p = find(boot_args);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: no guest program '%s' (see --list)\n", boot_args.c_str());
            return 2;
        }
        std::printf("%s\n%s\n", p->kernel, module_words(domain_of(*p, info_of(*p), o)).c_str());
        return 0;
    }
    if (!o.configs.empty()) {
        if (!o.names.empty()) {
            std::fprintf(stderr, "pvmmu-run: --config and program names do not mix\n");
            return 2;
        }
        return run_configs(o);
    }
    if (list) {
        for (const Program& p : kPrograms) std::printf("%-28s %s\n", p.name, info_of(p).title.c_str());
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
        std::vector<std::string> args{p.path};
        int expect_status = -1;
        std::string why;
        int code = -1;
        if (o.platform == "qemu") {
            const TestInfo t = info_of(p);
            // SPEC §5 properties x86 does not have: what these tests count
            // (faults on cached misses, cleans) cannot happen there.
            if (t.tlb_caches_invalid) {
                why = "needs a TLB that caches not-present translations (SPEC §5); x86 TLBs never do";
                code = 3;
            } else if (!t.coherent_walker) {
                why = "needs a page walker not coherent with the data cache (SPEC §5); the x86 walker is coherent";
                code = 3;
            }
            args = qemu_args({domain_of(p, t, o)}, o);
            expect_status = kQemuPoweroff;
        } else if (!o.cpus.empty()) {
            args.push_back("--cpus");
            args.push_back(o.cpus);
        }
        const auto t0 = std::chrono::steady_clock::now();
        if (code < 0) code = run_one(args, o, expect_status, true, why);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("pvmmu-run: %s: %s (exit %d) in %.1f s%s%s\n", n.c_str(), word_of(code), code, s,
                    why.empty() ? "" : ": ", why.c_str());
        std::fflush(stdout);
        if (code > worst) worst = code;
    }
    return worst;
}
