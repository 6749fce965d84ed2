// read_input_file; see input_file.h.
#include "input_file.h"

#include "run_backend.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pvmmu::run {

bool read_input_file(const std::string& path, uint64_t cap, std::vector<uint8_t>& out, std::string& why)
{
    out.clear();
    const std::string shown = "'" + printable(path) + "'";
    // Looked at before it is opened: opening a device node can have effects of
    // its own (a watchdog armed, a tape rewound).
    struct stat named = {};
    if (stat(path.c_str(), &named) != 0) {
        why = shown + ": " + std::strerror(errno);
        return false;
    }
    if (!S_ISREG(named.st_mode)) {
        why = shown + ": not a regular file";
        return false;
    }
    // O_NONBLOCK: should the name become a FIFO before the open, opening it
    // must not wait for a writer before any --timeout runs; the descriptor's
    // own fstat below refuses it (and anything else that is not this file).
    const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        why = shown + ": " + std::strerror(errno);
        return false;
    }
    struct stat st = {};
    bool ok = false;
    if (fstat(fd, &st) != 0) {
        why = shown + ": " + std::strerror(errno);
    } else if (!S_ISREG(st.st_mode) || st.st_dev != named.st_dev || st.st_ino != named.st_ino) {
        why = shown + ": not a regular file (it changed while it was opened)";
    } else if (uint64_t(st.st_size) > cap) {
        why = shown + ": " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(cap) +
              " this input may have";
    } else {
        // The size read is bounded by the cap even if the file grows meanwhile.
        out.resize(size_t(st.st_size));
        size_t got = 0;
        ok = true;
        while (got < out.size()) {
            const ssize_t n = read(fd, out.data() + got, out.size() - got);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) {
                why = shown + ": " + std::strerror(errno);
                ok = false;
                break;
            }
            if (n == 0) break;   // it shrank: what is there
            got += size_t(n);
        }
        out.resize(got);
    }
    close(fd);
    if (!ok) out.clear();
    return ok;
}

} // namespace pvmmu::run
