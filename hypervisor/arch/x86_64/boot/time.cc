// The TSC's frequency and the guests' vcpu_time_info (boot/time.h).
//
// Xen's scale: nanoseconds = ((tsc delta, shifted left by tsc_shift, right by
// -tsc_shift when negative) * tsc_to_system_mul) >> 32. The shift brings the
// frequency into (1 GHz, 2 GHz], so mul = 10^9 * 2^32 / that is in
// [2^31, 2^32): 32 bits, with at least 31 of them significant.
#include "boot/time.h"

#include <atomic>

#include "cpu/pit.h"
#include "cpu/x86.h"
#include "lib/console.h"

// boot/boot32.S: the TSC at the hypervisor's first instructions.
extern "C" uint64_t hv_entry_tsc;

namespace pvmmu::x86 {

namespace {
constexpr uint32_t kCalibrateUs = 50000;   // 50 ms: a 0.002 % PIT rounding
uint64_t g_tsc_hz, g_tsc0;
uint32_t g_mul;
int8_t g_shift;
// TSC ticks per ns, 32.32 fixed point (tsc_at): the inverse of scale().
uint64_t g_tsc_per_ns;

uint64_t scale(uint64_t delta)
{
    delta = g_shift >= 0 ? delta << g_shift : delta >> -g_shift;
    return uint64_t((unsigned __int128)delta * g_mul >> 32);
}
} // namespace

void time_init()
{
    const uint64_t t0 = rdtsc();
    pit_delay_us(kCalibrateUs);
    const uint64_t t1 = rdtsc();
    g_tsc_hz = (t1 - t0) * 1000000 / kCalibrateUs;
    if (g_tsc_hz == 0) g_tsc_hz = 1;   // defensive: a TSC that does not tick
    uint64_t f = g_tsc_hz;
    int shift = 0;
    while (f > 2000000000ull) f >>= 1, --shift;
    while (f <= 1000000000ull) f <<= 1, ++shift;
    g_shift = int8_t(shift);
    g_mul = uint32_t((1000000000ull << 32) / f);
    g_tsc0 = t0;
    // tsc_hz * 2^32 / 10^9 in two parts, as the image has no 128-bit division.
    constexpr uint64_t kNsPerS = 1000000000ull;
    g_tsc_per_ns = (g_tsc_hz / kNsPerS << 32) + ((g_tsc_hz % kNsPerS) << 32) / kNsPerS;
    printk("time: TSC %lu kHz (against the PIT); tsc_to_system_mul 0x%x, tsc_shift %d\n",
           (unsigned long)(g_tsc_hz / 1000), g_mul, shift);
}

uint64_t tsc_hz() { return g_tsc_hz; }

void tsc_delay_us(uint64_t us)
{
    const uint64_t start = rdtsc();
    const uint64_t ticks = us * g_tsc_hz / 1000000;   // no overflow below 1.8e19: us up to seconds
    while (rdtsc() - start < ticks) pause();
}

// In two parts, as the image has no 128-bit division (no libgcc): whole
// seconds, then the rest, whose product with 10^6 fits 64 bits.
uint64_t tsc_to_us(uint64_t ticks)
{
    return ticks / g_tsc_hz * 1000000 + ticks % g_tsc_hz * 1000000 / g_tsc_hz;
}

void boot_time_report(const char* event)
{
    static std::atomic<bool> reported{false};
    if (reported.exchange(true, std::memory_order_relaxed)) return;
    const uint64_t now = rdtsc();
    printk("boot time: %s %lu us after reset, %lu us after the hypervisor's entry (TSC, %lu kHz)\n", event,
           (unsigned long)tsc_to_us(now), (unsigned long)tsc_to_us(now - hv_entry_tsc),
           (unsigned long)(g_tsc_hz / 1000));
}

uint64_t system_time_now() { return scale(rdtsc() - g_tsc0); }

uint64_t tsc_at(uint64_t ns)
{
    // 2^62 ns is over a century: beyond it (kNever among them) there is no
    // deadline to arm. g_tsc_per_ns and scale() each round down, so the
    // first guess can fall short of ns by about ns * 5e-10 (tens of
    // microseconds after a day up); the gap is added until scale(), which
    // system_time_now() is, says ns is reached. A timer that fired early
    // would find its deadline not due and be armed again at once, over and
    // over until it is.
    // A guest chooses ns (a timer, a poll's timeout, a watchdog): on a TSC
    // above 4 GHz a deadline below 2^62 ns can still be more ticks than 64
    // bits hold, so the tick count is bounded too (2^62 ticks are decades
    // at any clock), and the correction makes a few rounds at most (one
    // that still falls short fires early and is armed again).
    if (ns >> 62) return 0;
    const unsigned __int128 guess = (unsigned __int128)ns * g_tsc_per_ns >> 32;
    if (guess >> 62) return 0;
    uint64_t ticks = uint64_t(guess);
    for (int round = 0; round < 4; ++round) {
        const uint64_t at = scale(ticks);
        if (at >= ns) break;
        ticks += uint64_t((unsigned __int128)(ns - at) * g_tsc_per_ns >> 32) + 1;
    }
    return g_tsc0 + ticks;
}

void time_publish(vcpu_time_info& t)
{
    // The guest reads version, the fields, version again, and retries while
    // the two differ or are odd; the fences keep the stores in that order for
    // the compiler (x86 keeps stores in order).
    volatile vcpu_time_info& v = t;
    v.version = v.version + 1;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    const uint64_t now = rdtsc();
    v.tsc_timestamp = now;
    v.system_time = scale(now - g_tsc0);
    v.tsc_to_system_mul = g_mul;
    v.tsc_shift = g_shift;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    v.version = v.version + 1;
}

} // namespace pvmmu::x86
