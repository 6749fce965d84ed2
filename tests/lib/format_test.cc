// The shared printf engine (lib/src/format.cc) against the host's C library:
// every conversion, flag, width, precision and length the hypervisor's
// printk and the guest kernels' vsnprintf are asked for must read exactly as
// glibc's snprintf writes it; and the buffer form cuts at the buffer's end as
// vsnprintf does.
#include <gtest/gtest.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <string>

#include "format/format.h"

namespace pvmmu::fmt {
namespace {

// What the engine writes into a 256-byte buffer.
std::string ours(const char* f, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, f);
    const int n = vformat_to(buf, sizeof buf, f, ap);
    va_end(ap);
    EXPECT_EQ(size_t(n), std::string(buf).size()) << f;
    return buf;
}

std::string libc(const char* f, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

// The same format and arguments through both.
#define SAME(...) EXPECT_EQ(ours(__VA_ARGS__), libc(__VA_ARGS__))

TEST(Format, PlainTextAndPercent)
{
    SAME("hello");
    SAME("");
    SAME("100%% sure");
}

TEST(Format, SignedDecimal)
{
    SAME("%d %i", 0, 42);
    SAME("%d", -1);
    SAME("%d %d", INT32_MAX, INT32_MIN);
    SAME("%ld %lld", long(INT64_MIN), (long long)INT64_MAX);
    SAME("%zd", ssize_t(-5));
    SAME("[%6d] [%-6d] [%06d]", -42, -42, -42);
    SAME("[%2d]", 12345);
    SAME("%hd %hhd", 70000, 300);   // converted to short, signed char
}

TEST(Format, UnsignedDecimal)
{
    SAME("%u", 0u);
    SAME("%u", UINT32_MAX);
    SAME("%lu %llu %zu", ~0ul, ~0ull, size_t(7));
    SAME("[%3u] [%-3u] [%03u]", 7u, 7u, 7u);
    SAME("%hu %hhu", 70000u, 300u);
}

TEST(Format, Hex)
{
    SAME("%x %X", 0xbeefu, 0xbeefu);
    SAME("%x", 0u);
    SAME("%lx %llx", 0xffff'8280'0010'0000ul, 0x1234'5678'9abc'def0ull);
    SAME("%016lx", 0x1000ul);
    SAME("%04lx", 0x8ul);
    SAME("%04lx", 0x123456ul);
    SAME("[%8x] [%-8x]", 0xabcu, 0xabcu);
    SAME("%#x %#llx %#X", 0x10u, 0xdeadull, 0xabu);
    SAME("%#x", 0u);   // no prefix before zero
    SAME("[%#010llx]", 0x42ull);
}

TEST(Format, Pointer)
{
    int x = 0;
    SAME("%p", static_cast<void*>(&x));
    SAME("[%20p] [%-20p]", static_cast<void*>(&x), static_cast<void*>(&x));
    // glibc prints a null pointer as "(nil)"; the engine as the number.
    EXPECT_EQ(ours("%p", static_cast<void*>(nullptr)), "0x0");
}

TEST(Format, StringsAndCharacters)
{
    SAME("%s", "abc");
    SAME("[%5s] [%-5s] [%2s]", "ab", "ab", "abcdef");
    SAME("[%.2s] [%.0s] [%.9s]", "abcdef", "abcdef", "abc");
    SAME("[%-44s]", "feature-fallback");
    SAME("%c%c%c", 'p', 'v', '!');
    SAME("[%3c] [%-3c]", 'x', 'y');
    // glibc's "(null)" for a null %s, which the engine matches.
    const char* none = nullptr;
    EXPECT_EQ(ours("%s", none), "(null)");
}

TEST(Format, LinesTheHypervisorPrints)
{
    SAME("  rip %016lx  cs %04lx  rflags %016lx\n", 0xffff'8280'0010'2345ul, 0x10ul, 0x202ul);
    SAME("EXCEPTION on cpu %u: vector %lu (%s), error code 0x%lx\n", 1u, 14ul, "#PF", 0x2ul);
    SAME("%s:%d: CHECK_EQ(%s, %s): %lld (%#llx) != %lld (%#llx) (vCPU %u)", "f.cc", 12, "a", "b", -1ll,
         ~0ull, 2ll, 2ull, 3u);
}

TEST(Format, UnknownConversionIsShownAndTakesNoArgument)
{
    EXPECT_EQ(ours("a %q b %d", 5), "a %q b 5");
    EXPECT_EQ(ours("end %"), "end %");
    EXPECT_EQ(ours("end %08"), "end %");
}

// vsnprintf's contract: the cut output holds cap - 1 characters and a NUL,
// and the result is the whole length.
int cut(char* buf, size_t cap, const char* f, ...)
{
    va_list ap;
    va_start(ap, f);
    const int n = vformat_to(buf, cap, f, ap);
    va_end(ap);
    return n;
}

TEST(Format, BufferEndCutsAndCountsTheWhole)
{
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    EXPECT_EQ(cut(buf, 5, "%s-%d", "abc", 12345), 9);
    EXPECT_STREQ(buf, "abc-");
    EXPECT_EQ(buf[5], 'Z');   // nothing past cap

    memset(buf, 'Z', sizeof buf);
    EXPECT_EQ(cut(buf, 1, "xyz"), 3);
    EXPECT_EQ(buf[0], '\0');
    EXPECT_EQ(buf[1], 'Z');

    memset(buf, 'Z', sizeof buf);
    EXPECT_EQ(cut(buf, 0, "xyz"), 3);   // cap 0: nothing written
    EXPECT_EQ(buf[0], 'Z');

    EXPECT_EQ(cut(buf, sizeof buf, "%07d", 42), 7);   // exactly fits: 7 and the NUL
    EXPECT_STREQ(buf, "0000042");
}

// A sink that is not a buffer (as printk's serial port): every character
// reaches it, and the count is theirs.
struct Collect : Sink {
    std::string s;
    Collect() : Sink{add} {}
    static void add(Sink& self, char c) { static_cast<Collect&>(self).s += c; }
};

size_t into(Collect& c, const char* f, ...)
{
    va_list ap;
    va_start(ap, f);
    const size_t n = vformat(c, f, ap);
    va_end(ap);
    return n;
}

TEST(Format, SinkGetsEveryCharacter)
{
    Collect c;
    std::string longer(300, 'x');
    EXPECT_EQ(into(c, "%s|%5u\n", longer.c_str(), 9u), 307u);
    EXPECT_EQ(c.s, longer + "|    9\n");
}

} // namespace
} // namespace pvmmu::fmt
