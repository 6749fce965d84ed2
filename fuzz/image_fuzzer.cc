// libFuzzer entry point of the image fuzzer (the harness is
// image_harness.cc): a broken invariant aborts, which libFuzzer records as a
// crash with the input that caused it. PVMMU_FUZZ_VERBOSE=1 prints, for each
// input, how many domain sizes accepted it.
#include <cstdio>
#include <cstdlib>

#include "image_harness.h"

namespace {
bool g_verbose = false;
} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const char* v = std::getenv("PVMMU_FUZZ_VERBOSE");
    g_verbose = v && v[0] == '1';
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const pvmmu::fuzz::ImageOutcome o = pvmmu::fuzz::run_image_input(data, size);
    if (g_verbose) std::fprintf(stderr, "pvmmu image fuzz: %zu bytes, placed in %u domain size(s)\n", size, o.accepted);
    if (!o.ok) {
        std::fprintf(stderr, "pvmmu fuzz: %s\n", o.failure.c_str());
        std::abort();
    }
    return 0;
}
