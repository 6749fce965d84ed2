// snprintf / vsnprintf for the guest runtime on bare metal (no libc): the
// conversions guest programs use — flags '-' '0' '#', a width, a precision
// for strings, length h hh l ll z, conversions d i u x X p s c %. No floating
// point (guest code is built without SSE).
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace {

struct Out {
    char* buf;
    size_t cap, n = 0;
    void put(char c)
    {
        if (n + 1 < cap) buf[n] = c;
        ++n;
    }
    void pad(int w, char c)
    {
        for (; w > 0; --w) put(c);
    }
};

void number(Out& o, uint64_t v, unsigned base, bool upper, bool neg, int width, bool zero, bool left,
            const char* prefix)
{
    char d[24];
    int k = 0;
    do {
        const unsigned x = unsigned(v % base);
        d[k++] = char(x < 10 ? '0' + x : (upper ? 'A' : 'a') + x - 10);
        v /= base;
    } while (v);
    int plen = neg ? 1 : 0;
    for (const char* q = prefix; *q; ++q) ++plen;
    const int fill = width - k - plen;
    if (!left && !zero) o.pad(fill, ' ');
    if (neg) o.put('-');
    for (const char* p = prefix; *p; ++p) o.put(*p);
    if (!left && zero) o.pad(fill, '0');
    while (k) o.put(d[--k]);
    if (left) o.pad(fill, ' ');
}

} // namespace

extern "C" int vsnprintf(char* buf, size_t cap, const char* fmt, va_list ap)
{
    Out o{buf, cap};
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            o.put(*p);
            continue;
        }
        bool left = false, zero = false, alt = false;
        for (;; ++p) {
            if (p[1] == '-') left = true;
            else if (p[1] == '0') zero = true;
            else if (p[1] == '#') alt = true;
            else break;
        }
        int width = 0, prec = -1;
        while (p[1] >= '0' && p[1] <= '9') width = width * 10 + (*++p - '0');
        if (p[1] == '.') {
            ++p;
            prec = 0;
            while (p[1] >= '0' && p[1] <= '9') prec = prec * 10 + (*++p - '0');
        }
        int len = 0;   // 0 int, 1 long / long long / size_t
        while (p[1] == 'l' || p[1] == 'z' || p[1] == 'h') len = (*++p == 'h') ? len : 1;
        const char c = *++p;
        switch (c) {
        case 'd':
        case 'i': {
            const int64_t v = len ? va_arg(ap, int64_t) : va_arg(ap, int);
            number(o, v < 0 ? 0 - uint64_t(v) : uint64_t(v), 10, false, v < 0, width, zero, left, "");
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            const uint64_t v = len ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            const unsigned base = c == 'u' ? 10 : 16;
            number(o, v, base, c == 'X', false, width, zero, left, alt && base == 16 && v ? "0x" : "");
            break;
        }
        case 'p':
            number(o, uint64_t(va_arg(ap, void*)), 16, false, false, width, zero, left, "0x");
            break;
        case 's': {
            const char* s = va_arg(ap, const char*);
            if (!s) s = "(null)";
            int n = 0;
            while (s[n] && (prec < 0 || n < prec)) ++n;
            if (!left) o.pad(width - n, ' ');
            for (int i = 0; i < n; ++i) o.put(s[i]);
            if (left) o.pad(width - n, ' ');
            break;
        }
        case 'c':
            o.put(char(va_arg(ap, int)));
            break;
        case '%':
            o.put('%');
            break;
        default:   // unknown conversion (or the end of fmt): shown as is
            o.put('%');
            if (!c) return int(o.n);
            o.put(c);
        }
    }
    if (cap) buf[o.n < cap ? o.n : cap - 1] = 0;
    return int(o.n);
}

extern "C" int snprintf(char* buf, size_t cap, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}
