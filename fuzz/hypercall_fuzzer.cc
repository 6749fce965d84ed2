// libFuzzer entry point of the hypercall fuzzer (the harness is
// harness.cc). Any broken invariant or state change by a refused request aborts,
// which libFuzzer records as a crash with the input that caused it.
// Built twice: hypercall_fuzzer, and hypercall_fuzzer_ad with
// PVMMU_FUZZ_CONCURRENT=1, where a second thread sets A/D bits meanwhile.
// PVMMU_FUZZ_STRICT=1 in the environment compares refused requests strictly;
// PVMMU_FUZZ_VERBOSE=1 prints every hypercall.
#include <cstdio>
#include <cstdlib>

#include "harness.h"

#ifndef PVMMU_FUZZ_CONCURRENT
#define PVMMU_FUZZ_CONCURRENT 0
#endif

namespace {
pvmmu::fuzz::Options g_options;

bool env_on(const char* name)
{
    const char* v = std::getenv(name);
    return v && v[0] == '1';
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    g_options.concurrent_ad = PVMMU_FUZZ_CONCURRENT;
    g_options.strict = env_on("PVMMU_FUZZ_STRICT");
    g_options.verbose = env_on("PVMMU_FUZZ_VERBOSE");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const pvmmu::fuzz::Outcome o = pvmmu::fuzz::run_input(data, size, g_options);
    if (!o.ok) {
        std::fprintf(stderr, "pvmmu fuzz: %s\n", o.failure.c_str());
        std::abort();
    }
    return 0;
}
