// A Linux bzImage's kernel, unpacked to its ELF as Xen's toolstack does before
// loading a PV kernel (xl's bzImage loader): the x86 boot protocol's setup
// header ("HdrS", protocol 2.08 or later for payload_offset/payload_length)
// names the compressed payload inside the protected-mode part; pvmmu-run
// hands the unpacked ELF to the hypervisor as the domain's module.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pvmmu::run {

enum class BzImage {
    NotOne,     // no bzImage setup header: the file is used as it is
    Unpacked,   // elf holds the payload's ELF
    Refused,    // a bzImage pvmmu-run cannot unpack; why says what it is
};

// max: the largest ELF taken, XZ-unpacked or not; pvmmu-run passes the
// domain's memory (a kernel larger than it cannot load). A payload that
// unpacks past it is refused as soon as it does: never more than max bytes
// held, nothing written anywhere.
BzImage bzimage_unpack(const std::vector<uint8_t>& file, std::vector<uint8_t>& elf, std::string& why, size_t max);

// max in words: "64 MiB", or bytes where it is not a whole MiB.
std::string bzimage_size_words(size_t max);

// One XZ stream of n bytes at p into out, at most max bytes; false with why
// set where it cannot (bzimage_xz.cc with liblzma, else
// bzimage_xz_missing.cc, which always refuses).
bool bzimage_unxz(const uint8_t* p, size_t n, size_t max, std::vector<uint8_t>& out, std::string& why);

} // namespace pvmmu::run
