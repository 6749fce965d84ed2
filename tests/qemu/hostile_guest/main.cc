// The hostile guest's start of day, its main loop and its report
// (docs/security.md §7.10). Module words (start_info.cmd_line): seed=N,
// ops=N (default 100000), time=S (stop after S seconds, whichever first),
// check=N (the invariant check every N operations, default 1000),
// progress=N (a progress line every N operations), trace=N (print each
// operation from the N-th on, before it runs: the last one printed before a
// hypervisor crash is the one that crashed it; and compare the guest's own
// page tables and image after each of them, the direct hypercalls made from
// the sealed page, sealed.S), edges=0 (no SYSCALL at the
// canonical boundary). The domain must be booted with the word
// `invariant-check` (pvmmu_op's check, docs/abi.md §10).
#include "hostile.h"

#include "format/format.h"

namespace hostile {

Rng rng;
Layout g;
Options opt;
Stats stats;

namespace {

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

} // namespace

void Rng::seed(uint64_t s)
{
    for (uint64_t& w : s_) {   // splitmix64
        s += 0x9e3779b97f4a7c15ull;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        w = z ^ (z >> 31);
    }
}

uint64_t Rng::next()
{
    const uint64_t r = rotl(s_[1] * 5, 7) * 9, t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return r;
}

// --- output -------------------------------------------------------------------

namespace {

// One console line: the shared printf engine's characters (format/format.h),
// then a newline, for which room is kept.
struct Line : pvmmu::fmt::Sink {
    char b[250];
    unsigned n = 0;
    Line() : Sink{put_char} {}
    static void put_char(Sink& self, char ch)
    {
        Line& l = static_cast<Line&>(self);
        if (l.n + 2 < sizeof(l.b)) l.b[l.n++] = ch;
    }
};

} // namespace

void vsay(const char* fmt, va_list ap)
{
    Line l;
    pvmmu::fmt::vformat(l, fmt, ap);
    l.b[l.n++] = '\n';
    hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, l.n, uint64_t(l.b));
}

int format(char* buf, size_t cap, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = pvmmu::fmt::vformat_to(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}

void say(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

namespace {

void shutdown(unsigned reason)
{
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

// The last operations, for the report of a failure.
struct Recent {
    uint64_t index;
    const char* what;
    uint64_t a[6];
    int64_t rc;
    bool done;
};
constexpr unsigned kRecent = 16;
Recent g_recent[kRecent];

} // namespace

void note(const char* what, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
    Recent& r = g_recent[stats.ops % kRecent];
    r = Recent{stats.ops, what, {a0, a1, a2, a3, a4, a5}, 0, false};
    if (stats.ops >= opt.trace_from)
        say("hostile: op %lu: %s(0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx)", stats.ops, what, a0, a1, a2, a3, a4, a5);
}

void noted_result(int64_t rc)
{
    Recent& r = g_recent[stats.ops % kRecent];
    r.rc = rc, r.done = true;
    if (stats.ops >= opt.trace_from) say("hostile: op %lu: = %ld", stats.ops, rc);
}

void print_recent_ops()
{
    for (unsigned k = kRecent; k-- > 0;) {
        if (stats.ops < k) continue;
        const Recent& r = g_recent[(stats.ops - k) % kRecent];
        if (!r.what || r.index != stats.ops - k) continue;
        say("hostile:   op %lu: %s(0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx)%s%ld", r.index, r.what, r.a[0], r.a[1], r.a[2], r.a[3],
            r.a[4], r.a[5], r.done ? " = " : "", r.done ? r.rc : int64_t(0));
    }
}

void fail(const char* fmt, ...)
{
    say("hostile: FAILURE at op %lu (seed %lu)", stats.ops, opt.seed);
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
    say("hostile: the last operations:");
    print_recent_ops();
    say("Test result: FAILURE");
    shutdown(SHUTDOWN_crash);
    for (;;) {
    }
}

// Nanoseconds since boot from vCPU 0's vcpu_time_info (docs/abi.md §10
// "Time"): system_time plus the scaled TSC advance since tsc_timestamp.
uint64_t now_ns()
{
    const volatile vcpu_time_info& t = g.shared->vcpu_info[0].time;
    for (;;) {
        const uint32_t version = t.version;
        asm volatile("" ::: "memory");
        const uint64_t stamp = t.tsc_timestamp, base = t.system_time;
        const uint32_t mul = t.tsc_to_system_mul;
        const int8_t shift = t.tsc_shift;
        uint32_t lo, hi;
        asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
        asm volatile("" ::: "memory");
        if ((version & 1) || version != t.version) continue;
        uint64_t d = ((uint64_t(hi) << 32) | lo) - stamp;
        d = shift >= 0 ? d << shift : d >> -shift;
        return base + uint64_t((unsigned __int128)d * mul >> 32);
    }
}

namespace {

// --- module words -----------------------------------------------------------------

bool word_value(const char* line, const char* key, uint64_t& out)
{
    for (const char* p = line; *p;) {
        while (*p == ' ') ++p;
        const char* k = key;
        const char* w = p;
        while (*k && *w == *k) ++w, ++k;
        if (!*k && *w == '=') {
            ++w;
            uint64_t v = 0;
            unsigned base = 10;
            if (w[0] == '0' && w[1] == 'x') base = 16, w += 2;
            for (; *w && *w != ' '; ++w) {
                const char ch = *w;
                const unsigned d = ch >= '0' && ch <= '9' ? unsigned(ch - '0')
                                   : base == 16 && ch >= 'a' && ch <= 'f' ? unsigned(ch - 'a' + 10) : 99;
                if (d >= base) fail("bad value in module word %s", key);
                v = v * base + d;
            }
            out = v;
            return true;
        }
        while (*p && *p != ' ') ++p;
    }
    return false;
}

void read_options(const start_info_t* si)
{
    char line[MAX_GUEST_CMDLINE + 1];
    unsigned n = 0;
    for (; n < MAX_GUEST_CMDLINE && si->cmd_line[n]; ++n) line[n] = char(si->cmd_line[n]);
    line[n] = 0;
    uint64_t edges = 1;
    (void)word_value(line, "seed", opt.seed);
    (void)word_value(line, "ops", opt.ops);
    (void)word_value(line, "time", opt.time_s);
    (void)word_value(line, "check", opt.check_every);
    (void)word_value(line, "trace", opt.trace_from);
    (void)word_value(line, "progress", opt.progress_every);
    (void)word_value(line, "edges", edges);
    opt.edges = edges != 0;
    if (opt.check_every == 0) opt.check_every = 1000;
    if (opt.progress_every == 0) opt.progress_every = opt.check_every * 10;
}

// --- the checks ---------------------------------------------------------------------

uint64_t g_hash;
uint64_t g_start_ns;

void check(const char* when)
{
    pvmmu_invariants r{};
    note("pvmmu_op(check_invariants)", PVMMUOP_check_invariants, uint64_t(&r));
    const long rc = hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_check_invariants, uint64_t(&r));
    noted_result(rc);
    ++stats.checks;
    if (rc == -XEN_EPERM) fail("the domain was booted without the module word invariant-check");
    if (rc != 0)
        fail("invariants broken %s: %ld (%lu core, %lu hypervisor violations; the console above has them)", when, rc,
             r.core_violations, r.hv_violations);
    if (protected_hash() != g_hash) {
        protected_diff();
        fail("the guest's own page tables changed %s (above)", when);
    }
    if (own_image_changed()) {
        own_image_diff();
        fail("the guest's own text, read-only data or layout changed %s (above)", when);
    }
    if (stats.ops % opt.progress_every == 0 || stats.ops == opt.ops)
        say("hostile: %lu ops (%lu hypercalls, %lu refused; %lu instructions, %lu traps; %lu checks), invariants ok "
            "(%lu frames, %lu tables, %lu entries), %lu s",
            stats.ops, stats.hypercalls, stats.refused, stats.probes, stats.traps, stats.checks, r.frames, r.tables,
            r.entries, uint64_t((now_ns() - g_start_ns) / 1000000000));
}

[[noreturn]] void image_changed_by(uint64_t op)
{
    const Recent& r = g_recent[op % kRecent];
    own_image_diff();
    fail("the guest's own text, read-only data or layout changed by operation %lu, %s(0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx, 0x%lx)", op,
         r.index == op && r.what ? r.what : "?", r.a[0], r.a[1], r.a[2], r.a[3], r.a[4], r.a[5]);
}

} // namespace

// From trace=N on, the guest's own tables and image are compared after every
// operation too (hashes, no hypercall), so a change is reported at the
// operation that made it; the module string keeps its length, and so its
// layout, which a replay needs. The image is compared again after each
// hypercall returns, before any more of the operation's code runs: a write
// across the guest's text is then named before the code it broke runs.
void check_after_op()
{
    if (protected_hash() != g_hash) {
        protected_diff();
        fail("the guest's own page tables changed by operation %lu (above)", stats.ops);
    }
    if (own_image_changed()) image_changed_by(stats.ops);
}

namespace {

bool time_up()
{
    return opt.time_s && now_ns() - g_start_ns >= opt.time_s * 1000000000ull;
}

void one_op()
{
    alloc_reset();
    const uint64_t r = rng.below(1000);
    if (r < 520) op_hypercall();
    else if (r < 880) op_instruction();
    else if (r < 930) op_write_pool_b();
    else if (r < 960) op_iret();
    else if (r < 980) op_user_instruction();
    else op_boundary_syscall();
}

} // namespace

} // namespace hostile

using namespace hostile;

// The sealed page's check found the image changed (sealed.S): what more can
// be said, if the code that says it is whole.
extern "C" void hostile_image_broken(uint64_t op) { image_changed_by(op); }

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    read_options(si);
    rng.seed(opt.seed);
    setup(si, initial_sp);
    g_start_ns = now_ns();
    g_hash = protected_hash();
    protected_snapshot();
    own_image_snapshot();
    say("hostile: seed %lu: up to %lu ops, up to %lu s (0: no limit), invariant check every %lu ops%s", opt.seed,
        opt.ops, opt.time_s, opt.check_every, opt.edges ? "" : ", no SYSCALL at the canonical boundary");
    check("after setup");
    while (stats.ops < opt.ops && !(stats.ops % 64 == 0 && time_up())) {
        one_op();
        if (stats.ops >= opt.trace_from) check_after_op();
        ++stats.ops;
        if (stats.ops % opt.check_every == 0) check("");
    }
    check("at the end");
    say("hostile: done: %lu ops in %lu ms (%lu hypercalls, %lu refused; %lu instructions, %lu traps: #DE %lu #DB %lu "
        "#BP %lu #UD %lu #NM %lu #NP %lu #SS %lu #GP %lu #PF %lu; %lu invariant checks, all ok)",
        stats.ops, uint64_t((now_ns() - g_start_ns) / 1000000), stats.hypercalls, stats.refused, stats.probes, stats.traps,
        stats.by_vector[0], stats.by_vector[1], stats.by_vector[3], stats.by_vector[6], stats.by_vector[7],
        stats.by_vector[11], stats.by_vector[12], stats.by_vector[13], stats.by_vector[14], stats.checks);
    say("hostile: hypercalls by kind, and how many succeeded:");
    print_call_stats();
    say("Test result: SUCCESS");
    sched_shutdown_t s{SHUTDOWN_poweroff};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
    for (;;) {
    }
}
