// The platform-independent part of the guest runtime: console formatting,
// outcomes, vCPU start-up and work hand-out, the barrier, fault dispatch.
#include <stdarg.h>
#include <stdio.h>

#include "rt_platform.h"

namespace pvmmu::guest::rt {

namespace {

Guest the_guest;
std::atomic<uint8_t> worst{uint8_t(Outcome::Success)};

// Start-up and run_on_all hand-out. `started`: the library is up (or failed);
// `attached`: secondaries with scratch pages; `finished`: test_main returned.
std::atomic<bool> started{false}, init_ok{false}, finished{false};
std::atomic<unsigned> attached{0};
std::atomic<uint64_t> work_gen{0};
std::atomic<unsigned> work_done{0};
void (*work_fn)(Cpu&, void*) = nullptr;
void* work_arg = nullptr;

void vprint(const char* prefix, const char* fmt, va_list ap)
{
    char buf[512];
    int n = snprintf(buf, sizeof(buf), "%s", prefix);
    n += vsnprintf(buf + n, sizeof(buf) - size_t(n), fmt, ap);
    if (n >= int(sizeof(buf)) - 1) n = int(sizeof(buf)) - 2;
    if (n == 0 || buf[n - 1] != '\n') buf[n++] = '\n';
    console_write(buf, size_t(n));
}

void record(Outcome o)
{
    uint8_t cur = worst.load(std::memory_order_relaxed);
    while (uint8_t(o) > cur && !worst.compare_exchange_weak(cur, uint8_t(o), std::memory_order_acq_rel)) {
    }
}

} // namespace

void print(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint("", fmt, ap);
    va_end(ap);
}

#define PVMMU_RT_OUTCOME(name, prefix, value) \
    void name(const char* fmt, ...)           \
    {                                         \
        va_list ap;                           \
        va_start(ap, fmt);                    \
        vprint(prefix, fmt, ap);              \
        va_end(ap);                           \
        record(value);                        \
    }
PVMMU_RT_OUTCOME(fail, "FAILURE: ", Outcome::Failure)
PVMMU_RT_OUTCOME(error, "ERROR: ", Outcome::Error)
PVMMU_RT_OUTCOME(skip, "SKIP: ", Outcome::Skip)
#undef PVMMU_RT_OUTCOME

Outcome outcome() { return Outcome(worst.load(std::memory_order_acquire)); }
bool failed() { return outcome() > Outcome::Skip; }

const char* outcome_name(Outcome o)
{
    switch (o) {
    case Outcome::Success: return "SUCCESS";
    case Outcome::Skip: return "SKIP";
    case Outcome::Error: return "ERROR";
    default: return "FAILURE";
    }
}

bool check(bool ok, const char* file, int line, const char* what)
{
    if (!ok) fail("%s:%d: CHECK(%s) (vCPU %u)", file, line, what, this_cpu().id);
    return ok;
}

bool check_eq(uint64_t a, uint64_t b, const char* file, int line, const char* ea, const char* eb)
{
    if (a != b)
        fail("%s:%d: CHECK_EQ(%s, %s): %lld (%#llx) != %lld (%#llx) (vCPU %u)", file, line, ea, eb,
             (long long)a, (unsigned long long)a, (long long)b, (unsigned long long)b, this_cpu().id);
    return a == b;
}

Guest& guest() { return the_guest; }

const char* arg(const char* key)
{
    for (unsigned i = 0; const char* w = platform_arg(i); ++i) {
        unsigned k = 0;
        while (key[k] && w[k] == key[k]) ++k;
        if (!key[k] && w[k] == '=') return w + k + 1;
    }
    return nullptr;
}

uint64_t arg_u64(const char* key, uint64_t dflt)
{
    const char* v = arg(key);
    if (!v || !*v) return dflt;
    unsigned base = 10;
    if (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
        base = 16;
        v += 2;
    }
    uint64_t n = 0;
    for (; *v; ++v) {
        const char ch = *v;
        const unsigned d = ch >= '0' && ch <= '9' ? unsigned(ch - '0')
                           : ch >= 'a' && ch <= 'f' ? unsigned(ch - 'a' + 10)
                           : ch >= 'A' && ch <= 'F' ? unsigned(ch - 'A' + 10)
                                                    : 99;
        if (d >= base) return dflt;
        n = n * base + d;
    }
    return n;
}

bool fault(Cpu& c, const FaultInfo& f) { return c.guest && the_guest.handle_fault(c, f); }

void Barrier::wait(Cpu& c)
{
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
        arrived_.store(0, std::memory_order_relaxed);
        gen_.fetch_add(1, std::memory_order_acq_rel);
        return;
    }
    while (gen_.load(std::memory_order_acquire) == gen) c.hc.relax();
}

void run_on_all(void (*fn)(Cpu&, void*), void* arg)
{
    Cpu& self = this_cpu();
    work_fn = fn;
    work_arg = arg;
    work_done.store(0, std::memory_order_relaxed);
    work_gen.fetch_add(1, std::memory_order_acq_rel);
    fn(self, arg);
    const unsigned others = nr_vcpus() - 1;
    while (work_done.load(std::memory_order_acquire) < others) self.hc.relax();
}

namespace {

// The first of `bits` the hypervisor does not offer, by name; nullptr if none.
const char* missing(uint32_t bits)
{
    if ((bits & needs::kFlagRange) && !(the_guest.features() & (1u << PVMMU_FEAT_flag_range_update)))
        return "MMU_FLAG_RANGE_UPDATE (pvmmu's mmu_update cmd 4)";
    if ((bits & needs::kPvmmuOp) && !pvmmu_op_available())
        return "pvmmu_op (pvmmu's hypercall for its facts, counters and policy)";
    return nullptr;
}

} // namespace

bool offers(uint32_t bits, const char* part)
{
    const char* what = missing(bits);
    if (what && part) print("left out, as this hypervisor has no %s: %s", what, part);
    return what == nullptr;
}

Outcome boot_main(Cpu& c, const BootInfo& bi)
{
    print("--- pvmmu guest test: %s ---", test_title);
    const int rc = the_guest.init(c, bi);
    init_ok.store(rc == 0, std::memory_order_release);
    started.store(true, std::memory_order_release);
    if (rc) {
        error("guest library start-up failed: %d", rc);
    } else if (const char* what = missing(test_config.needs)) {
        skip("needs %s, which this hypervisor does not offer", what);
    } else {
        while (attached.load(std::memory_order_acquire) < bi.nr_vcpus - 1) c.hc.relax();
        test_main();
    }
    finished.store(true, std::memory_order_release);
    const Outcome o = outcome();
    print("Test result: %s", outcome_name(o));
    return o;
}

void secondary_main(Cpu& c)
{
    while (!started.load(std::memory_order_acquire)) c.hc.relax();
    if (init_ok.load(std::memory_order_acquire)) {
        if (int rc = the_guest.attach(c)) error("vCPU %u: no scratch pages: %d", c.id, rc);
        attached.fetch_add(1, std::memory_order_acq_rel);
    }
    uint64_t seen = 0;
    while (!finished.load(std::memory_order_acquire)) {
        const uint64_t g = work_gen.load(std::memory_order_acquire);
        if (g == seen) {
            c.hc.relax();
            continue;
        }
        seen = g;
        work_fn(c, work_arg);
        work_done.fetch_add(1, std::memory_order_acq_rel);
    }
}

} // namespace pvmmu::guest::rt
