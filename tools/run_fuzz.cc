// pvmmu-run --fuzz: the hostile guest (tests/qemu/hostile_guest) from a seed
// next to a well-behaved guest program, the run judged by the console
// (docs/security.md §7.10).
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "run_cli.h"

#include <unistd.h>

namespace pvmmu::run {

namespace {

// Whether l has one of `words` where a word starts (not "pvpanic", the
// device the boot line names).
template <size_t N>
bool says(const std::string& l, const char* const (&words)[N])
{
    for (const char* w : words)
        for (size_t at = l.find(w); at != std::string::npos; at = l.find(w, at + 1))
            if (at == 0 || !std::isalpha(static_cast<unsigned char>(l[at - 1]))) return true;
    return false;
}

// The lines of a console that say the run went wrong, whoever printed them:
// the hypervisor's panic or exception report, a crashed domain, an invariant
// violation, a failed check.
bool alarming(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "VIOLATION", "FAILED", "FAILURE",
                                         "shut down (crash)", "crashed"};
    return says(l, kWords);
}

// Of those, the ones that say something crashed (a domain or the hypervisor):
// exit 6 whichever domain ended last, as for ./pvmmu run.
bool crash_line(const std::string& l)
{
    static const char* const kWords[] = {"PANIC", "panic", "EXCEPTION", "shut down (crash)", "crashed"};
    return says(l, kWords);
}

std::string fuzz_replay(const RunOptions& o, unsigned long long ops_done)
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

} // namespace

// --fuzz: domain 1 the hostile guest (2 vCPUs, vCPU 1 started and downed by
// it now and then; an idle peer whose frames it names), domain 2 the
// well-behaved program with its own size, vCPUs, policy and peer.
int run_fuzz(RunOptions o)
{
    FuzzOptions& f = o.fuzz;
    if (!f.seed_set) f.seed = (static_cast<unsigned long long>(std::time(nullptr)) * 2654435761ull ^ getpid()) % 1000000007ull;
    if (!f.ops) f.ops = f.time_s ? ~0ull : 100000;
    if (!o.timeout_set) {
        const double by_ops = f.ops == ~0ull ? 0 : double(f.ops) / 1000.0;   // 1000 operations/s at worst
        const double run = f.time_s ? double(f.time_s) : by_ops;
        o.timeout_s = run + 180;
    }
    Domain h;
    h.name = "hostile";
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
    std::vector<Domain> doms{h};
    if (f.with != "none") {
        const Program* p = find(f.with);
        if (!p) {
            std::fprintf(stderr, "pvmmu-run: --with: no guest program '%s' (see --list)\n", f.with.c_str());
            return 2;
        }
        Options plain = o;   // the program's own vCPUs, not --cpus
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
    int code = launch(kQemu, doms, o, false, why, &console);
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
        std::printf("pvmmu-run: fuzz: FAILED (seed %llu): %s\n", f.seed, printable(why).c_str());
        const size_t from = console.size() > 40 ? console.size() - 40 : 0;
        std::printf("pvmmu-run: fuzz: the console's last %zu lines:\n", console.size() - from);
        for (size_t i = from; i < console.size(); ++i) std::printf("| %s\n", printable(console[i]).c_str());
        std::printf("pvmmu-run: fuzz: seed %llu; the last progress line said %llu operations; replay: %s "
                    "[--trace N to print each operation from the N-th]\n",
                    f.seed, ops_done, fuzz_replay(o, 0).c_str());
    } else {
        std::printf("pvmmu-run: fuzz: seed %llu: %s\n", f.seed, printable(done).c_str());
    }
    std::printf("pvmmu-run: fuzz: %s (exit %d) in %.1f s\n", word_of(code), code, secs);
    return code;
}

} // namespace pvmmu::run
