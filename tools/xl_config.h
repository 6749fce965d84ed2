// A domain described in Xen's xl.cfg syntax (xl.cfg(5)), read with Xen's own
// parser, libxlutil from libxen-dev: the keys pvmmu-run uses to boot it on
// the bare-metal hypervisor (docs/guest.md "On bare metal").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pvmmu::run {

struct DomainConfig {
    std::string name;     // `name` (default: the file's name)
    std::string kernel;   // `kernel`: a guest kernel ELF, or the name of a guest test program
    std::string ramdisk;  // `ramdisk`: the domain's initial module ("": none)
    long vcpus = 1;       // `vcpus`
    long memory = 64;     // `memory`, MiB
    // `max_grant_frames` and `max_maptrack_frames` (xl.cfg(5)): the domain's
    // grant table limits, -1 when not set (the hypervisor's defaults, Xen's:
    // 64 and 1024, which are also the most pvmmu takes).
    long max_grant_frames = -1;
    long max_maptrack_frames = -1;
    // The kernel's command line, as xl makes it: `cmdline` alone when given,
    // else "root=ROOT EXTRA" from `root` and `extra`; more words for the
    // domain's module string.
    std::string extra;
    // What the launcher does not use but boots without, each a warning to
    // print: "`KEY` is not used by pvmmu-run: ignored" and the like.
    std::vector<std::string> warnings;
};

// The keys an xl.cfg text sets, in order, once each: a name at the start of a
// statement followed by `=` or `+=` (xl.cfg(5); comments, strings and lists
// skipped). For a text libxlutil has accepted.
std::vector<std::string> xl_config_keys(const std::string& text);

// An xl.cfg is a few lines; a bigger file is refused unread.
constexpr uint64_t kMaxXlConfigBytes = 1 << 20;

// true, or false with `err` saying why (libxlutil's own report goes to stderr).
// A key the launcher does not use is a warning when the domain boots the same
// without it (devices, actions, limits), an error when it would boot
// something else (`bootloader`, a `type` other than "pv", `pvh`, `firmware`):
// never silently dropped.
bool read_xl_config(const std::string& path, DomainConfig& out, std::string& err);

} // namespace pvmmu::run
