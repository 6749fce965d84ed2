#pragma once
// The few helpers of the tiny test guests (hello_guest, isolation_guest):
// console output and exact-result checks through the hypercall page only.
#include <stddef.h>
#include <stdint.h>

#include <pvmmu/abi.h>
#include <xen/io/console.h>

#include "hypercall.h"

namespace tiny {

using pvmmu::xenpv::hypercall;

inline unsigned g_checks, g_failed;

inline size_t length(const char* s)
{
    size_t n = 0;
    while (s[n]) ++n;
    return n;
}

inline long write(const char* s)
{
    return hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, length(s), uint64_t(s));
}

inline void write_hex(uint64_t v)
{
    char b[19] = "0x";
    int n = 2;
    for (int shift = 60; shift >= 0; shift -= 4)
        if ((v >> shift) || shift == 0 || n > 2) b[n++] = "0123456789abcdef"[(v >> shift) & 15];
    b[n] = 0;
    write(b);
}

// Counts a check; prints the ones whose result is not `want`.
inline void check(const char* what, long got, long want)
{
    ++g_checks;
    if (got == want) return;
    ++g_failed;
    write("FAILED: ");
    write(what);
    write("\n");
}

inline void shutdown(unsigned reason)
{
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

// "<who>: all checks passed" and poweroff, or "<who>: some checks FAILED"
// and a crash shutdown.
[[noreturn]] inline void finish(const char* who)
{
    write(who);
    write(g_failed ? ": some checks FAILED\n" : ": all checks passed\n");
    shutdown(g_failed ? SHUTDOWN_crash : SHUTDOWN_poweroff);
    for (;;) {
    }
}

} // namespace tiny
