// The printf engine (format/format.h): one pass over the format, each
// conversion's flags, width, precision and length read before its argument.
#include "format/format.h"

#include <stdint.h>

namespace pvmmu::fmt {

namespace {

// va_list in a struct, so the helpers below can take it by reference on
// every ABI (on x86-64 a va_list parameter is a pointer, not a va_list).
struct Args {
    va_list ap;
};

enum class Len { Char, Short, Int, Long };

struct Spec {
    bool left = false, zero = false, alt = false;
    int width = 0;
    int prec = -1;   // -1: none
    Len len = Len::Int;
};

struct Out {
    Sink& sink;
    size_t n = 0;
    void put(char c)
    {
        sink.put(sink, c);
        ++n;
    }
    void pad(int w, char c)
    {
        for (; w > 0; --w) put(c);
    }
};

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int64_t signed_arg(Args& a, Len l)
{
    switch (l) {
    case Len::Char: return static_cast<signed char>(va_arg(a.ap, int));
    case Len::Short: return static_cast<short>(va_arg(a.ap, int));
    case Len::Int: return va_arg(a.ap, int);
    case Len::Long: break;
    }
    return va_arg(a.ap, int64_t);   // long, long long and ssize_t are 64 bits on x86-64
}

uint64_t unsigned_arg(Args& a, Len l)
{
    switch (l) {
    case Len::Char: return static_cast<unsigned char>(va_arg(a.ap, unsigned));
    case Len::Short: return static_cast<unsigned short>(va_arg(a.ap, unsigned));
    case Len::Int: return va_arg(a.ap, unsigned);
    case Len::Long: break;
    }
    return va_arg(a.ap, uint64_t);
}

// A number: [spaces] [-] [prefix] [zeros] digits [spaces], width counting all.
void number(Out& o, const Spec& s, uint64_t v, unsigned base, bool upper, bool negative, const char* prefix)
{
    const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char d[20];   // 2^64 - 1 has 20 decimal digits
    int k = 0;
    do {
        d[k++] = digits[v % base];
        v /= base;
    } while (v);
    int plen = negative ? 1 : 0;
    for (const char* q = prefix; *q; ++q) ++plen;
    const int fill = s.width - k - plen;
    if (!s.left && !s.zero) o.pad(fill, ' ');
    if (negative) o.put('-');
    for (const char* q = prefix; *q; ++q) o.put(*q);
    if (!s.left && s.zero) o.pad(fill, '0');
    while (k) o.put(d[--k]);
    if (s.left) o.pad(fill, ' ');
}

void string(Out& o, const Spec& s, const char* str)
{
    if (!str) str = "(null)";
    int n = 0;
    while (str[n] && (s.prec < 0 || n < s.prec)) ++n;
    if (!s.left) o.pad(s.width - n, ' ');
    for (int i = 0; i < n; ++i) o.put(str[i]);
    if (s.left) o.pad(s.width - n, ' ');
}

// The flags, width, precision and length after a '%'; p is left on the
// conversion character.
Spec parse(const char*& p)
{
    Spec s;
    for (;; ++p) {
        if (*p == '-') s.left = true;
        else if (*p == '0') s.zero = true;
        else if (*p == '#') s.alt = true;
        else break;
    }
    while (is_digit(*p)) s.width = s.width * 10 + (*p++ - '0');
    if (*p == '.') {
        s.prec = 0;
        for (++p; is_digit(*p); ++p) s.prec = s.prec * 10 + (*p - '0');
    }
    for (;; ++p) {
        if (*p == 'h') s.len = s.len == Len::Short ? Len::Char : Len::Short;
        else if (*p == 'l' || *p == 'z') s.len = Len::Long;
        else break;
    }
    return s;
}

} // namespace

size_t vformat(Sink& sink, const char* fmt, va_list ap)
{
    Args a;
    va_copy(a.ap, ap);
    Out o{sink};
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            o.put(*p);
            continue;
        }
        ++p;
        const Spec s = parse(p);
        const char c = *p;
        if (c == 'd' || c == 'i') {
            const int64_t v = signed_arg(a, s.len);
            number(o, s, v < 0 ? 0 - uint64_t(v) : uint64_t(v), 10, false, v < 0, "");
        } else if (c == 'u' || c == 'x' || c == 'X') {
            const uint64_t v = unsigned_arg(a, s.len);
            const bool hex = c != 'u';
            number(o, s, v, hex ? 16 : 10, c == 'X', false, s.alt && hex && v ? (c == 'X' ? "0X" : "0x") : "");
        } else if (c == 'p') {
            number(o, s, reinterpret_cast<uintptr_t>(va_arg(a.ap, void*)), 16, false, false, "0x");
        } else if (c == 's') {
            string(o, s, va_arg(a.ap, const char*));
        } else if (c == 'c') {
            if (!s.left) o.pad(s.width - 1, ' ');
            o.put(char(va_arg(a.ap, int)));
            if (s.left) o.pad(s.width - 1, ' ');
        } else if (c == '%') {
            o.put('%');
        } else {   // unknown: shown as is rather than guessing at its argument
            o.put('%');
            if (!c) break;   // fmt ended inside the conversion
            o.put(c);
        }
    }
    va_end(a.ap);
    return o.n;
}

} // namespace pvmmu::fmt
