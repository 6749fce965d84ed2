// The guest test convention (docs/design.md §6, after the Xen Test Framework): one folder
// per test under guest/tests/<name>/, defining
//     const char test_title[] = "...";
//     const pvmmu::guest::TestConfig test_config = {...};
//     void test_main();          // runs on vCPU 0 once the library is up
// The test reports with rt::fail / rt::error / rt::skip (or the CHECK macros);
// the runtime then prints the last console line
//     Test result: SUCCESS | SKIP | ERROR | FAILURE
// (ERROR: the test itself is broken; FAILURE: the thing tested is), which
// `pvmmu run` maps to the exit codes 0, 3, 4, 5 (6: crashed, hung or no result).
#pragma once

#include "guest/runtime.h"

namespace pvmmu::guest {

// Hypercall commands a test can have denied by policy (docs/design.md §4 hooks; the
// bits of abi.h's PVMMU_DENY_*, which the platform hands to the hypervisor).
namespace deny {
inline constexpr uint32_t kMmuNormal = PVMMU_DENY_MMU_NORMAL;   // mmu_update cmd 0
inline constexpr uint32_t kMmuAtomic = PVMMU_DENY_MMU_ATOMIC;   // cmd 2
inline constexpr uint32_t kFlagRange = PVMMU_DENY_FLAG_RANGE;   // cmd 4
inline constexpr uint32_t kPin = PVMMU_DENY_PIN;                // MMUEXT_(UN)PIN_*
inline constexpr uint32_t kTlbFlush = PVMMU_DENY_TLB_FLUSH;     // MMUEXT_TLB_FLUSH_* / INVLPG_*
inline constexpr uint32_t kUpdateVaMapping = PVMMU_DENY_UPDATE_VA_MAPPING;
inline constexpr uint32_t kMulticall = PVMMU_DENY_MULTICALL;
} // namespace deny

// pvmmu's extensions of the Xen PV ABI a test needs (TestConfig::needs). Where
// the hypervisor lacks one (Xen) the test SKIPs with a line naming it; a test
// that needs one for a part only asks rt::offers() there.
namespace needs {
inline constexpr uint32_t kFlagRange = 1u << 0;   // MMU_FLAG_RANGE_UPDATE (PVMMU_FEAT_flag_range_update)
inline constexpr uint32_t kPvmmuOp = 1u << 1;     // pvmmu_op: the hypervisor's facts, counters, deny
} // namespace needs

// What a test needs from the platform that runs it.
struct TestConfig {
    unsigned cpus = 2;                 // vCPUs by default (`pvmmu run --cpus N` overrides)
    uint64_t frames = 4096;            // the domain's memory, in 4 KiB frames
    uint32_t deny = 0;                 // deny:: bits, applied before the guest starts
    bool second_domain = false;        // another domain whose frames the test may name
    uint32_t needs = 0;                // needs:: bits
    bool tlb_caches_invalid = false;   // platform property (docs/design.md §5)
    bool coherent_walker = true;       // platform property (docs/design.md §5)
};

enum class Outcome : uint8_t { Success = 0, Skip = 1, Error = 2, Failure = 3 };

namespace rt {
// Record an outcome with a console line; the worst one recorded is the result.
void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void skip(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
Outcome outcome();
// Whether the hypervisor offers every needs:: bit in `bits`. If not, and a
// part of the test is named, a line says that part is left out (the outcome
// stays that of the parts that ran).
bool offers(uint32_t bits, const char* part = nullptr);
bool failed();   // anything worse than SKIP recorded so far

// What the CHECK macros call.
bool check(bool ok, const char* file, int line, const char* what);
bool check_eq(uint64_t a, uint64_t b, const char* file, int line, const char* ea, const char* eb);
} // namespace rt

} // namespace pvmmu::guest

extern const char test_title[];
extern const pvmmu::guest::TestConfig test_config;
void test_main();

// Record a FAILURE (and go on) when cond is false; evaluates to cond.
#define CHECK(cond) ::pvmmu::guest::rt::check(bool(cond), __FILE__, __LINE__, #cond)
// Exact equality of two integers (errno values, PTEs, counts), printed on failure.
#define CHECK_EQ(a, b) \
    ::pvmmu::guest::rt::check_eq(uint64_t(a), uint64_t(b), __FILE__, __LINE__, #a, #b)
