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
// --fuzz boots the hostile guest (tests/qemu/hostile_guest) from a seed next
// to a well-behaved guest program and judges the run by the console
// (docs/security.md §7.10).
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
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

// --fuzz: the hostile guest's run (its module words, docs/security.md §7.10).
struct FuzzOptions {
    bool on = false;
    bool seed_set = false;
    unsigned long long seed = 0;
    unsigned long long ops = 0;        // 0: 100000, or no limit when time_s is given
    unsigned long long time_s = 0;     // 0: no limit
    unsigned long long check = 1000;   // the invariant check every N operations
    unsigned long long trace = 0;      // print every operation from this one on (0: none)
    bool trace_set = false;
    bool edges = true;                 // SYSCALL at the canonical boundary
    std::string with = "tlb-shootdown";   // the well-behaved domain's program, or "none"
};

struct Options {
    std::string platform = "sim";
    std::string accel;  // qemu: kvm or tcg; empty: kvm when /dev/kvm is usable
    std::string cpus;   // empty: the program's default
    double timeout_s = 60;
    bool timeout_set = false;
    bool quiet = false;
    std::vector<std::string> names;
    std::vector<std::string> configs;   // --config: xl.cfg files, one domain each
    FuzzOptions fuzz;
};

void usage(FILE* f)
{
    std::fprintf(f,
        "usage: pvmmu-run [--platform sim|qemu] [--accel kvm|tcg|tcg-icount] [--cpus N] [--timeout SECONDS]\n"
        "                 [--quiet] NAME...\n"
        "       pvmmu-run [--accel kvm|tcg|tcg-icount] [--timeout SECONDS] [--quiet] --config FILE...\n"
        "       pvmmu-run --list\n"
        "       pvmmu-run [--cpus N] --boot-args NAME\n"
        "       pvmmu-run --fuzz [--seed N] [--ops N] [--time S] [--check N] [--trace N] [--no-edges]\n"
        "                 [--with NAME|none] [--accel kvm|tcg|tcg-icount] [--timeout SECONDS] [--quiet]\n"
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
        "  --fuzz           boot the hostile guest (tests/qemu/hostile_guest: random\n"
        "                   hypercalls, instructions and exception handlers from a seed,\n"
        "                   the hypervisor's invariant check every --check N operations)\n"
        "                   next to a well-behaved guest program (--with NAME, default\n"
        "                   tlb-shootdown; none: alone) on the bare-metal hypervisor; exit\n"
        "                   0 when both report SUCCESS, the machine ends powered off and\n"
        "                   the console shows no crash, panic or violation; else 5 (a\n"
        "                   failure reported) or 6 (crash, hang), with the seed and the\n"
        "                   console's last lines. --seed (default: from the clock, printed),\n"
        "                   --ops (default 100000, or no limit with --time), --time S\n"
        "                   (stop after S seconds), --trace N (print each operation from\n"
        "                   the N-th on, to see the one a crash follows), --no-edges (no\n"
        "                   SYSCALL at the canonical boundary); --timeout defaults to the\n"
        "                   run's length and 180 s more\n"
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
            std::string& why, std::vector<std::string>* console = nullptr)
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
            if (console) console->push_back(line);
            if (expect_status < 0 || line.rfind("Test result: ", 0) == 0) last = line;
            if (line.rfind("Test result: ", 0) == 0 && code_of(line) > worst) worst = code_of(line);
            line.clear();
        }
        std::fflush(stdout);
    }
    if (!line.empty()) {   // an unterminated last line still counts as the last line
        if (!o.quiet) std::printf("%s\n", line.c_str());
        if (console) console->push_back(line);
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

// The lines of a console that say the run went wrong, whoever printed them:
// the hypervisor's panic or exception report, a crashed domain, an invariant
// violation, a failed check.
bool alarming(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "VIOLATION", "FAILED", "FAILURE",
                                         "shut down (crash)", "crashed"};
    for (const char* w : kWords)
        if (l.find(w) != std::string::npos) return true;
    return false;
}

// Of those, the ones that say something crashed (a domain or the hypervisor):
// exit 6 whichever domain ended last, as for ./pvmmu run.
bool crash_line(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "shut down (crash)", "crashed"};
    for (const char* w : kWords)
        if (l.find(w) != std::string::npos) return true;
    return false;
}

std::string fuzz_replay(const Options& o, unsigned long long ops_done)
{
    std::string r = "./pvmmu fuzz --platform qemu --seed " + std::to_string(o.fuzz.seed);
    if (ops_done) r += " --ops " + std::to_string(ops_done);
    else if (o.fuzz.ops && o.fuzz.ops != ~0ull) r += " --ops " + std::to_string(o.fuzz.ops);
    if (o.fuzz.time_s && !ops_done) r += " --time " + std::to_string(o.fuzz.time_s);
    if (o.fuzz.check != 1000) r += " --check " + std::to_string(o.fuzz.check);
    if (!o.fuzz.edges) r += " --no-edges";
    if (o.fuzz.with != "tlb-shootdown") r += " --with " + o.fuzz.with;
    if (!o.accel.empty()) r += " --accel " + o.accel;
    return r;
}

// --fuzz: domain 1 the hostile guest (2 vCPUs, vCPU 1 started and downed by
// it now and then; an idle peer whose frames it names), domain 2 the
// well-behaved program with its own size, vCPUs, policy and peer.
int run_fuzz(Options o)
{
    FuzzOptions& f = o.fuzz;
    if (!f.seed_set) f.seed = (static_cast<unsigned long long>(std::time(nullptr)) * 2654435761ull ^ getpid()) % 1000000007ull;
    if (!f.ops) f.ops = f.time_s ? ~0ull : 100000;
    if (!o.timeout_set) {
        const double by_ops = f.ops == ~0ull ? 0 : double(f.ops) / 1000.0;   // 1000 operations/s at worst
        const double run = f.time_s ? double(f.time_s) : by_ops;
        o.timeout_s = run + 180;
    }
    QemuDomain h;
    h.kernel = PVMMU_HOSTILE_GUEST;
    h.vcpus = 2;
    h.frames = 4096;
    h.peer_frames = 64;
    // Fixed-width words: the module string's length moves where the domains'
    // frames lie, and the run replays exactly only with the same layout.
    char words[160];
    std::snprintf(words, sizeof(words), "invariant-check seed=0x%016llx ops=0x%016llx time=0x%016llx "
                  "check=0x%016llx trace=0x%016llx edges=%d", f.seed, f.ops, f.time_s, f.check,
                  f.trace_set ? f.trace : ~0ull, f.edges ? 1 : 0);
    h.extra = words;
    std::vector<QemuDomain> doms{h};
    if (f.with != "none") {
        const Program* p = find(f.with);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: --with: no guest program '%s' (see --list)\n", f.with.c_str());
            return 2;
        }
        Options plain = o;
        plain.cpus.clear();
        doms.push_back(domain_of(*p, info_of(*p), plain));
    }
    std::printf("pvmmu-run: fuzz: seed %llu, %s operations%s%s, invariant check every %llu; next to %s; "
                "timeout %.0f s\n", f.seed, f.ops == ~0ull ? "no limit of" : std::to_string(f.ops).c_str(),
                f.time_s ? ", at most " : "", f.time_s ? (std::to_string(f.time_s) + " s").c_str() : "", f.check,
                f.with.c_str(), o.timeout_s);
    std::printf("pvmmu-run: fuzz: replay with: %s\n", fuzz_replay(o, 0).c_str());
    std::fflush(stdout);
    std::vector<std::string> console;
    std::string why;
    const auto t0 = std::chrono::steady_clock::now();
    int code = run_one(qemu_args(doms, o), o, kQemuPoweroff, false, why, &console);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // The judgement: both domains' SUCCESS, the hostile guest's summary, no
    // alarming line, the hypervisor's last check of the core ok.
    const unsigned want = f.with == "none" ? 1 : 2;
    unsigned successes = 0;
    unsigned long long ops_done = 0;
    std::string done, first_alarm, last_core;
    for (const std::string& l : console) {
        if (l == "Test result: SUCCESS") ++successes;
        if (l.rfind("hostile: done:", 0) == 0) done = l;
        if (l.rfind("core invariants:", 0) == 0) last_core = l;
        unsigned long long n;
        if (std::sscanf(l.c_str(), "hostile: %llu ops", &n) == 1) ops_done = n;
        if (first_alarm.empty() && alarming(l)) first_alarm = l;
    }
    if (code == 0) {
        if (!first_alarm.empty()) why = "the console says: " + first_alarm, code = crash_line(first_alarm) ? kCrashed : 5;
        else if (successes != want) why = std::to_string(successes) + " `Test result: SUCCESS` lines, not " + std::to_string(want), code = 5;
        else if (done.empty()) why = "no `hostile: done:` line", code = 5;
        else if (last_core.rfind("core invariants: ok", 0) != 0) why = "the last core check is not ok", code = 5;
    } else if (!first_alarm.empty() && why.empty()) {
        why = "the console says: " + first_alarm;
    }
    if (code != 0) {
        std::printf("pvmmu-run: fuzz: FAILED (seed %llu): %s\n", f.seed, why.c_str());
        const size_t from = console.size() > 40 ? console.size() - 40 : 0;
        std::printf("pvmmu-run: fuzz: the console's last %zu lines:\n", console.size() - from);
        for (size_t i = from; i < console.size(); ++i) std::printf("| %s\n", console[i].c_str());
        std::printf("pvmmu-run: fuzz: seed %llu; the last progress line said %llu operations; replay: %s "
                    "[--trace N to print each operation from the N-th]\n",
                    f.seed, ops_done, fuzz_replay(o, 0).c_str());
    } else {
        std::printf("pvmmu-run: fuzz: seed %llu: %s\n", f.seed, done.c_str());
    }
    std::printf("pvmmu-run: fuzz: %s (exit %d) in %.1f s\n", word_of(code), code, secs);
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
                return 2;
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
                return 2;
            }
        } else if (a == "--timeout") {
            const std::string t = value("--timeout");
            char* end = nullptr;
            o.timeout_s = std::strtod(t.c_str(), &end);
            o.timeout_set = true;
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
    if (o.fuzz.on) {
        if (!o.names.empty() || !o.configs.empty() || list) {
            std::fprintf(stderr, "pvmmu-run: --fuzz takes no program names, --config or --list\n");
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
