// The COM1 console (a 16550 UART, polled both ways) and the printk behind
// every line the hypervisor prints. Lines end in CR LF, as a serial terminal
// expects.
#include "lib/console.h"

#include "boot/boot_defs.h"
#include "cpu/percpu.h"
#include "cpu/x86.h"
#include "lib/raw_lock.h"

namespace pvmmu::x86 {

namespace {

// 16550 registers, offsets from the base port.
constexpr uint16_t kData = 0, kIntEnable = 1, kFifo = 2, kLineCtl = 3, kModemCtl = 4, kLineStatus = 5;
constexpr uint8_t kDlab = 0x80;          // line control: divisor latch access
constexpr uint8_t kTxEmpty = 0x20;       // line status: transmit holding register empty
constexpr uint8_t kRxReady = 0x01;       // line status: a received byte waits in the data register

RawLock g_lock;

// Who left the terminal's current line open (console_write's owner), 0: the
// next byte starts a line. Under g_lock. Anyone else's output starts a line
// of its own first, so a guest's prompt never hides the start of another
// domain's line or of the hypervisor's (whose first words the launcher reads).
uint32_t g_open_owner = 0;

void serial_putc(char c)
{
    // A missing UART reads 0xff, so this never spins forever on hardware without COM1.
    while (!(inb(COM1_PORT + kLineStatus) & kTxEmpty)) pause();
    outb(COM1_PORT + kData, uint8_t(c));
}

void putc(char c)
{
    if (c == '\n') serial_putc('\r');
    serial_putc(c);
}

void puts_n(const char* s, int n)
{
    for (int i = 0; i < n; ++i) putc(s[i]);
}

void start_line_for(uint32_t owner)
{
    if (g_open_owner && g_open_owner != owner) putc('\n');
    g_open_owner = 0;
}

void pad(int n, char c)
{
    for (; n > 0; --n) putc(c);
}

void put_number(uint64_t v, unsigned base, bool upper, bool negative, int width, bool zero, bool left)
{
    char buf[24];
    int n = 0;
    const char* digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        buf[n++] = digits[v % base];
        v /= base;
    } while (v);
    const int len = n + (negative ? 1 : 0);
    if (!left && !zero) pad(width - len, ' ');
    if (negative) putc('-');
    if (!left && zero) pad(width - len, '0');
    while (n) putc(buf[--n]);
    if (left) pad(width - len, ' ');
}

void format(const char* fmt, va_list ap)
{
    for (const char* p = fmt; *p; ++p) {
        if (*p != '%') {
            putc(*p);
            continue;
        }
        ++p;
        bool left = false, zero = false;
        for (;; ++p) {
            if (*p == '-') left = true;
            else if (*p == '0') zero = true;
            else break;
        }
        int width = 0;
        while (*p >= '0' && *p <= '9') width = width * 10 + (*p++ - '0');
        int longs = 0;
        bool size = false;
        for (;; ++p) {
            if (*p == 'l') ++longs;
            else if (*p == 'z') size = true;
            else break;
        }
        const bool wide = longs > 0 || size;
        switch (*p) {
        case 'd':
        case 'i': {
            const int64_t v = wide ? va_arg(ap, int64_t) : va_arg(ap, int);
            put_number(v < 0 ? 0 - uint64_t(v) : uint64_t(v), 10, false, v < 0, width, zero, left);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            const uint64_t v = wide ? va_arg(ap, uint64_t) : va_arg(ap, unsigned);
            put_number(v, *p == 'u' ? 10 : 16, *p == 'X', false, width, zero, left);
            break;
        }
        case 'p':
            puts_n("0x", 2);
            put_number(reinterpret_cast<uint64_t>(va_arg(ap, void*)), 16, false, false, 16, true, false);
            break;
        case 's': {
            const char* s = va_arg(ap, const char*);
            if (!s) s = "(null)";
            int n = 0;
            while (s[n]) ++n;
            if (!left) pad(width - n, ' ');
            puts_n(s, n);
            if (left) pad(width - n, ' ');
            break;
        }
        case 'c':
            putc(char(va_arg(ap, int)));
            break;
        case '%':
            putc('%');
            break;
        default:   // unknown conversion: show it rather than guess its argument
            putc('%');
            if (!*p) return;
            putc(*p);
        }
    }
}

} // namespace

void console_init()
{
    outb(COM1_PORT + kIntEnable, 0x00);   // polled: no UART interrupts
    outb(COM1_PORT + kLineCtl, kDlab);
    outb(COM1_PORT + kData, 1);           // divisor 1: 115200 baud
    outb(COM1_PORT + kIntEnable, 0);
    outb(COM1_PORT + kLineCtl, 0x03);     // 8 data bits, no parity, 1 stop bit
    outb(COM1_PORT + kFifo, 0xc7);        // FIFOs on and cleared
    outb(COM1_PORT + kModemCtl, 0x03);    // DTR, RTS
}

void vprintk(const char* fmt, va_list ap)
{
    const uint32_t cpu = this_cpu_id();
    g_lock.lock(cpu);
    start_line_for(0);
    format(fmt, ap);
    g_lock.unlock();
}

void console_write(const char* s, size_t n, uint32_t owner, const char* prefix)
{
    g_lock.lock(this_cpu_id());
    const bool continues = owner && g_open_owner == owner;
    start_line_for(owner);
    if (prefix && !continues)
        for (; *prefix; ++prefix) putc(*prefix);
    for (size_t i = 0; i < n; ++i) putc(s[i]);
    if (n && s[n - 1] != '\n') g_open_owner = owner;
    g_lock.unlock();
}

size_t console_read(char* buf, size_t max)
{
    g_lock.lock(this_cpu_id());
    size_t n = 0;
    // A missing UART reads 0xff: its "ready" bit would never clear, so the
    // read stops at max, and a line status of 0xff is taken as no UART.
    for (uint8_t lsr; n < max && (lsr = inb(COM1_PORT + kLineStatus)) != 0xff && (lsr & kRxReady);)
        buf[n++] = char(inb(COM1_PORT + kData));
    g_lock.unlock();
    return n;
}

void printk(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintk(fmt, ap);
    va_end(ap);
}

void panic_vprintk(const char* fmt, va_list ap)
{
    const uint32_t cpu = this_cpu_id();
    const bool mine = g_lock.held_by(cpu);   // faulted inside printk: print over it
    if (!mine) g_lock.lock(cpu);
    start_line_for(0);
    format(fmt, ap);
    if (!mine) g_lock.unlock();
}

void panic_printk(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    panic_vprintk(fmt, ap);
    va_end(ap);
}

} // namespace pvmmu::x86
