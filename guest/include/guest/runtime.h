// The guest runtime that test programs (and other guest programs) use besides
// the MMU library: console, vCPU identity, running a function on every vCPU, a
// barrier that keeps serving interrupts, and a few facts that only the platform
// knows (another domain's frames, the hypervisor's, its own event counts).
// A platform implements it (guest/platform/sim today); programs include only
// this and the library, never a platform header, so they run unchanged on
// bare metal later.
#pragma once

#include <atomic>

#include "guest/guest.h"

namespace pvmmu::guest::rt {

// One console line per call (a newline is added when missing).
void print(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

Cpu& this_cpu();
unsigned nr_vcpus();
Guest& guest();

// Runs fn on every vCPU, the caller's included, and returns when all have
// finished. Called by one vCPU at a time (the one running test_main).
void run_on_all(void (*fn)(Cpu&, void*), void* arg);

template <class F>
void on_all(F&& f)
{
    run_on_all([](Cpu& c, void* p) { (*static_cast<F*>(p))(c); }, &f);
}

// A barrier for n vCPUs whose waiters keep serving TLB shootdowns (a vCPU that
// only spun would never acknowledge another's flush).
class Barrier {
public:
    explicit Barrier(unsigned n) : n_(n) {}
    void wait(Cpu& c);

private:
    const unsigned n_;
    std::atomic<unsigned> arrived_{0};
    std::atomic<unsigned> gen_{0};
};

// Spins (serving interrupts) until pred() holds.
template <class P>
void wait_until(Cpu& c, P&& pred)
{
    while (!pred()) c.hc.relax();
}

// --- Platform facts (false / zero where a platform cannot tell) ----------------

// What the platform counted for one vCPU's CPU: TLB work and shootdowns.
struct PlatformCounters {
    uint64_t faults = 0;             // page faults raised by the MMU
    uint64_t tlb_misses = 0;         // accesses the TLB did not hold (a walk followed)
    bool tlb_misses_counted = false; // false: tlb_misses is unknown (a hardware walker tells no one)
    uint64_t flush_all = 0, flush_page = 0;   // TLB flushes this CPU performed
    uint64_t shootdowns_sent = 0, shootdowns_served = 0;
    uint64_t cleans = 0;
};
[[nodiscard]] bool platform_counters(unsigned vcpu, PlatformCounters& out);

// The other domain a test asked for (TestConfig::second_domain).
struct ForeignDomain {
    uint16_t domid = 0;
    Mfn first{0};
    uint64_t nr_frames = 0;
};
[[nodiscard]] bool foreign_domain(ForeignDomain& out);

// Whether pvmmu_op answers (docs/abi.md §10): the hypervisor is pvmmu, and
// hypervisor_frame, io_frame, deny, foreign_domain and the hypervisor's
// counters can be asked. false on Xen (-ENOSYS).
[[nodiscard]] bool pvmmu_op_available();

// A frame the hypervisor owns, and one of device (I/O) memory.
Mfn hypervisor_frame();
Mfn io_frame();

// Denies more hypercall commands to this domain from now on (bits of
// TestConfig::deny). Only while the other vCPUs are idle. false if the platform
// cannot change its policy at run time.
[[nodiscard]] bool deny(uint32_t bits);

// The program's arguments: `key=value` words the platform was given (on the
// sim, the command line after its own options; on bare metal, the boot command
// line). The value of `key`, or nullptr when absent.
const char* arg(const char* key);
// The same as a number (decimal or 0x-hex), or `dflt` when absent or malformed.
uint64_t arg_u64(const char* key, uint64_t dflt);

// A monotonic clock in nanoseconds, for benchmarks (never for test outcomes).
uint64_t now_ns();

// Rounds of the hypervisor's A/D-preserving install loops that lost to a
// hardware A/D update and went round again (docs/design.md §7's cmpxchg retries), counted
// machine-wide since boot. false where the platform cannot tell.
[[nodiscard]] bool hypervisor_install_retries(uint64_t& out);

// --- Benchmarking only ---------------------------------------------------------

// The ceiling of docs/design.md §7's "native" mode: a compare-exchange on the page-table
// entry at machine address `entry` as if the guest's page tables were writable
// to it, with no hypervisor check, no reference counting and no lock. Unsafe by
// design (it can break every invariant of docs/design.md §4); only benchmarks use it, and
// only on entries whose frame and RW-writable reference do not change meaning.
// false: the platform refuses (it is free to; bare metal under a real policy
// does), and nothing happened. Otherwise `swapped` says whether `desired` went
// in, and `expected` receives the value seen.
[[nodiscard]] bool native_pte_cmpxchg(Maddr entry, uint64_t& expected, uint64_t desired, bool& swapped);

// Called by the platform for every page fault of guest code: the library's
// handler; true to retry the access.
bool fault(Cpu& c, const FaultInfo& f);

} // namespace pvmmu::guest::rt
