// Files the launcher is handed (an xl.cfg, a guest kernel) are untrusted
// input, as Xen's xl treats a guest's: each is opened once, must be a regular
// file (not a directory, a device that never ends or a FIFO that never
// opens), is read whole up to a cap, and every failure says which path and why
// (docs/security.md "The launcher's inputs").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pvmmu::run {

// Reads `path` into `out`: true, or false with `why` naming the path and the
// reason (strerror, "not a regular file", "N bytes, more than the cap of M").
bool read_input_file(const std::string& path, uint64_t cap, std::vector<uint8_t>& out, std::string& why);

} // namespace pvmmu::run
