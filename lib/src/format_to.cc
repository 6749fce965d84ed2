// vformat_to (format/format.h): the engine into a caller's buffer, with
// vsnprintf's contract. Its own file and CMake target (pvmmu_format_to), so
// that an image which only prints to a device, the hypervisor's, does not
// carry it: the images are linked without section garbage collection.
#include "format/format.h"

namespace pvmmu::fmt {

namespace {

struct BufferSink : Sink {
    char* buf;
    size_t cap;
    size_t n = 0;
    BufferSink(char* b, size_t c) : Sink{put_char}, buf(b), cap(c) {}
    static void put_char(Sink& self, char c)
    {
        BufferSink& b = static_cast<BufferSink&>(self);
        if (b.n + 1 < b.cap) b.buf[b.n] = c;
        ++b.n;
    }
};

} // namespace

int vformat_to(char* buf, size_t cap, const char* fmt, va_list ap)
{
    BufferSink b(buf, cap);
    const size_t n = vformat(b, fmt, ap);
    if (cap) buf[n < cap ? n : cap - 1] = 0;
    return int(n);
}

} // namespace pvmmu::fmt
