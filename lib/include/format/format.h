// The printf engine of the hypervisor (printk, lib/console.cc) and of the
// guest kernels (vsnprintf, guest/platform/xenpv/format.cc). Freestanding: no
// libc, no heap, no floating point (both are built without SSE). Each side
// keeps only its sink: the serial port, a buffer.
//
// What it understands, a subset of C's printf with C's meaning: flags '-'
// (left-justify), '0' (pad numbers with zeros after the sign and prefix), '#'
// (0x before a non-zero %x, 0X before %X); a decimal width; a precision, for
// %s only (at most that many bytes); lengths hh h l ll z; conversions d i u x
// X p s c %. %p is 0x and the hex digits. A null %s prints "(null)". Any other
// conversion is printed as '%' and its character, and no argument is taken.
#pragma once

#include <stdarg.h>
#include <stddef.h>

namespace pvmmu::fmt {

// Where formatted characters go, one at a time. A sink derives from Sink and
// its put casts the Sink& back to itself.
struct Sink {
    void (*put)(Sink& self, char c);
};

// fmt with the arguments of ap, into sink. Returns the number of characters
// put.
size_t vformat(Sink& sink, const char* fmt, va_list ap);

// vsnprintf's contract: at most cap - 1 characters and a NUL into buf
// (nothing when cap is 0); returns the length the whole output has, so a
// result >= cap says it was cut.
int vformat_to(char* buf, size_t cap, const char* fmt, va_list ap);

} // namespace pvmmu::fmt
