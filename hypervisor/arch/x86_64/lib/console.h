// The hypervisor console: COM1 at 115200 8N1, polled, with printk, a small printf.
// One lock for the whole console so lines from different CPUs never interleave;
// a CPU that faults while holding it still gets its last words out (see
// lib/console.cc).
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace pvmmu::x86 {

void console_init();

// A printf subset: flags '-' '0', a width, length l / ll / z, conversions
// d i u x X p s c %. The format attribute lets -Wformat check every call.
__attribute__((format(printf, 1, 2))) void printk(const char* fmt, ...);
void vprintk(const char* fmt, va_list ap);
// Bytes as they are (a guest's console_io output), under the console lock.
void console_write(const char* s, size_t n);

// For the fatal paths: takes the console even if this CPU already holds it
// (an exception inside printk), so a panic never deadlocks on its own message.
__attribute__((format(printf, 1, 2))) void panic_printk(const char* fmt, ...);
void panic_vprintk(const char* fmt, va_list ap);

} // namespace pvmmu::x86
