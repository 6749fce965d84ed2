// The COM1 console (a 16550 UART, polled both ways) and the printk behind
// every line the hypervisor prints, formatted by the engine the guest kernels
// share (format/format.h). Lines end in CR LF, as a serial terminal expects.
#include "lib/console.h"

#include "boot/boot_defs.h"
#include "cpu/percpu.h"
#include "cpu/x86.h"
#include "format/format.h"
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

void start_line_for(uint32_t owner)
{
    if (g_open_owner && g_open_owner != owner) putc('\n');
    g_open_owner = 0;
}

// printk's sink: the engine's characters straight to the UART, under g_lock.
void serial_put(fmt::Sink&, char c) { putc(c); }

void format(const char* f, va_list ap)
{
    fmt::Sink serial{serial_put};
    fmt::vformat(serial, f, ap);
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
