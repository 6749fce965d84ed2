// The C string functions a freestanding x86-64 image needs: the compiler
// emits calls to memcpy/memset/memmove/memcmp (struct copies, zeroing) even
// with -ffreestanding. Shared by the hypervisor image and the bare-metal guest
// kernels, which take it with pvmmu_link_string (lib/CMakeLists.txt). It must
// be built with -fno-tree-loop-distribute-patterns, or GCC turns the loops
// back into calls to these very functions.
#include <stddef.h>
#include <stdint.h>

extern "C" {
// rep movsb / rep stosb: short, and fast on CPUs with ERMS. Written in asm so
// the compiler cannot turn these loops back into calls to themselves.
void* memcpy(void* dst, const void* src, size_t n)
{
    void* d = dst;
    asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
    return dst;
}

void* memset(void* dst, int c, size_t n)
{
    void* d = dst;
    asm volatile("rep stosb" : "+D"(d), "+c"(n) : "a"(c) : "memory");
    return dst;
}

void* memmove(void* dst, const void* src, size_t n)
{
    if (dst <= src || static_cast<const char*>(src) + n <= dst) return memcpy(dst, src, n);
    // Overlapping with dst above src: copy backwards (DF set only here).
    void* d = static_cast<char*>(dst) + n - 1;
    const void* s = static_cast<const char*>(src) + n - 1;
    asm volatile("std; rep movsb; cld" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
    return dst;
}

int memcmp(const void* a, const void* b, size_t n)
{
    const auto* x = static_cast<const unsigned char*>(a);
    const auto* y = static_cast<const unsigned char*>(b);
    for (size_t i = 0; i < n; ++i)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

size_t strlen(const char* s)
{
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

} // extern "C"
