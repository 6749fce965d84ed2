// A domain described in Xen's xl.cfg syntax (xl.cfg(5)), read with Xen's own
// parser, libxlutil from libxen-dev: the keys pvmmu-run uses to boot it on
// the bare-metal hypervisor (docs/guest.md "On bare metal").
#pragma once

#include <cstdint>
#include <string>

namespace pvmmu::run {

struct DomainConfig {
    std::string name;     // `name` (default: the file's name)
    std::string kernel;   // `kernel`: a guest kernel ELF, or the name of a guest test program
    long vcpus = 1;       // `vcpus`
    long memory = 64;     // `memory`, MiB
    std::string extra;    // `extra`: more words for the domain's module string
};

// An xl.cfg is a few lines; a bigger file is refused unread.
constexpr uint64_t kMaxXlConfigBytes = 1 << 20;

// true, or false with `err` saying why (libxlutil's own report goes to stderr).
bool read_xl_config(const std::string& path, DomainConfig& out, std::string& err);

} // namespace pvmmu::run
