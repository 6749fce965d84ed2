// snprintf / vsnprintf for the guest runtime on bare metal (no libc): the
// printf engine the hypervisor shares (format/format.h, which lists the
// conversions), writing into the caller's buffer.
#include <stdarg.h>
#include <stddef.h>

#include "format/format.h"

extern "C" int vsnprintf(char* buf, size_t cap, const char* fmt, va_list ap)
{
    return pvmmu::fmt::vformat_to(buf, cap, fmt, ap);
}

extern "C" int snprintf(char* buf, size_t cap, const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
    return n;
}
