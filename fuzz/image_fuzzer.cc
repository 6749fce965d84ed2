// libFuzzer entry point of the image fuzzer (the harness is
// image_harness.cc): a broken invariant aborts, which libFuzzer records as a
// crash with the input that caused it. PVMMU_FUZZ_VERBOSE=1 prints, for each
// input, how many domain sizes accepted it.
//
// Half the mutations know the ELF: they set one 8-byte field the loader
// reads as an address or a size (e_entry, a program header's offset,
// addresses and sizes, an 8-byte Xen note's value) to a value at an edge of
// the address space or of pvmmu's and Linux's layouts, or move it by a
// little. A byte-level mutator alone almost never writes
// 0xfffffffffffff000 over exactly a note's value.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "image_harness.h"

namespace {
bool g_verbose = false;

constexpr uint64_t kEdges[] = {0,
                               0x1000,
                               0xfff,
                               0x40000000,
                               0x8000000000,           // pvmmu's VIRT_BASE (L4 slot 1)
                               0x8000200000,           // pvmmu's kernels' text
                               0x00007ffffffff000,     // the last low canonical page
                               0x0000800000000000,     // the first non-canonical address
                               0xffff800000000000,     // the first high canonical address
                               0xffffffff80000000,     // Linux's VIRT_BASE
                               0xffffffff81000000,     // Linux's text
                               0xffffffffffe00000,
                               0xfffffffffffff000,     // + 4 KiB wraps to 0
                               0xffffffffffffffff,
                               0x8000000000000000,
                               0x0010000000000000};    // a page number whose << 12 loses its top bits

uint64_t le64(const uint8_t* p)
{
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}

// Offsets of the 8-byte fields an ELF input's loader reads as addresses or
// sizes; at most kMax.
size_t elf_fields(const uint8_t* d, size_t n, size_t (&out)[64])
{
    constexpr size_t kMax = sizeof(out) / sizeof(out[0]);
    size_t k = 0;
    if (n < 64 || std::memcmp(d, "\x7f" "ELF", 4) != 0) return 0;
    out[k++] = 24;   // e_entry
    const uint64_t phoff = le64(d + 32);
    const unsigned phnum = unsigned(d[56] | d[57] << 8);
    for (unsigned i = 0; i < phnum && phoff <= n && (n - phoff) / 56 > i && k + 5 <= kMax; ++i) {
        const size_t ph = size_t(phoff) + 56 * i;
        for (size_t f : {8, 16, 24, 32, 40}) out[k++] = ph + f;   // offset, vaddr, paddr, filesz, memsz
        uint32_t type;
        std::memcpy(&type, d + ph, 4);
        const uint64_t off = le64(d + ph + 8), len = le64(d + ph + 32);
        if (type != 4 || off > n || len > n - off) continue;   // PT_NOTE inside the input
        for (uint64_t o = off; o + 12 <= off + len && k < kMax;) {
            uint32_t h[3];
            std::memcpy(h, d + o, 12);
            const uint64_t desc = o + 12 + ((uint64_t(h[0]) + 3) & ~3ull);
            if (h[1] == 8 && desc + 8 <= off + len) out[k++] = size_t(desc);
            o = desc + ((uint64_t(h[1]) + 3) & ~3ull);
        }
    }
    return k;
}
} // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed)
{
    std::minstd_rand rng(seed);
    size_t fields[64];
    const size_t n = rng() % 2 ? elf_fields(data, size, fields) : 0;
    if (n == 0) return LLVMFuzzerMutate(data, size, max_size);
    uint8_t* f = data + fields[rng() % n];
    uint64_t v = le64(f);
    switch (rng() % 3) {
    case 0: v = kEdges[rng() % (sizeof(kEdges) / sizeof(kEdges[0]))]; break;
    case 1: v += (rng() % 2 ? 1ull : 0x1000ull) * (rng() % 2 ? 1 : ~0ull); break;   // +-1, +-4 KiB
    default: v ^= 1ull << (rng() % 64); break;
    }
    std::memcpy(f, &v, 8);
    return size;
}

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
