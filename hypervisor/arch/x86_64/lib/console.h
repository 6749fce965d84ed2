// The hypervisor console: COM1 at 115200 8N1, polled, with printk, a small
// printf, and the bytes typed at it (console_read, for the console domain:
// pv/console_input.cc).
// One lock for the whole console so lines from different CPUs never interleave;
// a CPU that faults while holding it still gets its last words out (see
// lib/console.cc).
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

namespace pvmmu::x86 {

void console_init();

// printf's subset that format/format.h lists. The format attribute lets
// -Wformat check every call.
__attribute__((format(printf, 1, 2))) void printk(const char* fmt, ...);
void vprintk(const char* fmt, va_list ap);
// Bytes as they are (a guest's console output), under the console lock.
// Output that does not end in '\n' leaves the line open for `owner` (not 0):
// its next bytes continue it, anyone else's start a new line first. `prefix`
// (or nullptr) goes before s when s starts a line, not when it continues one.
void console_write(const char* s, size_t n, uint32_t owner, const char* prefix);
// Up to max bytes the UART has received (none without a UART); never waits.
size_t console_read(char* buf, size_t max);

// For the fatal paths: takes the console even if this CPU already holds it
// (an exception inside printk), so a panic never deadlocks on its own message.
__attribute__((format(printf, 1, 2))) void panic_printk(const char* fmt, ...);
void panic_vprintk(const char* fmt, va_list ap);

} // namespace pvmmu::x86
