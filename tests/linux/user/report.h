/* One result line per program, read by the initramfs's /init
 * (tools/make-initramfs.sh) and by the tests that boot it: "NAME: PASS ..."
 * or "NAME: FAIL ...", then exit 0 or 1. */
#ifndef PVMMU_LINUX_USER_REPORT_H
#define PVMMU_LINUX_USER_REPORT_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static inline void report_line(const char* name, int ok, const char* fmt, va_list ap)
{
    char what[256];
    vsnprintf(what, sizeof(what), fmt, ap);
    printf("%s: %s %s\n", name, ok ? "PASS" : "FAIL", what);
    fflush(stdout);
}

/* The program's verdict: prints the line and exits. */
static inline __attribute__((noreturn, format(printf, 3, 4))) void report(const char* name, int ok,
                                                                          const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report_line(name, ok, fmt, ap);
    va_end(ap);
    exit(ok ? 0 : 1);
}

#endif
