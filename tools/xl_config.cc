// read_xl_config; see xl_config.h.
#include "xl_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "input_file.h"
#include "run_backend.h"

extern "C" {
#include <libxlutil.h>
}

namespace pvmmu::run {

namespace {

bool has_control(const std::string& s)
{
    for (const unsigned char c : s)
        if (c < 0x20 || c == 0x7f) return true;
    return false;
}

} // namespace

bool read_xl_config(const std::string& path, DomainConfig& out, std::string& err)
{
    // Read here, once, and checked before libxlutil sees it: a NUL byte in a
    // quoted string trips an assertion in its lexer (the process aborts).
    std::vector<uint8_t> text;
    if (!read_input_file(path, kMaxXlConfigBytes, text, err)) return false;
    if (!text.empty() && std::memchr(text.data(), 0, text.size())) {
        err = "'" + printable(path) + "': has a NUL byte: not an xl.cfg text file";
        return false;
    }
    // The name libxlutil's messages give the file: escaped, as every path
    // shown. Its messages quote the file's text, so they go to a buffer and
    // reach the terminal escaped too.
    const std::string shown = printable(path);
    char* report = nullptr;
    size_t report_len = 0;
    FILE* rep = open_memstream(&report, &report_len);
    XLU_Config* cfg = rep ? xlu_cfg_init(rep, shown.c_str()) : nullptr;
    if (!cfg) {
        if (rep) std::fclose(rep);
        std::free(report);
        err = "out of memory";
        return false;
    }
    bool ok = false;
    const char* s = nullptr;
    out = DomainConfig{};
    const size_t slash = path.find_last_of('/');
    out.name = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (xlu_cfg_readdata(cfg, reinterpret_cast<const char*>(text.data()), int(text.size())) != 0) {
        std::fflush(rep);
        std::string why(report ? report : "", report_len);
        while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
        err = "cannot parse '" + printable(path) + "'" + (why.empty() ? "" : ": " + printable(why));
    } else if (xlu_cfg_get_string(cfg, "kernel", &s, 0) != 0) {
        err = "'" + printable(path) + "': no `kernel`";
    } else {
        out.kernel = s;
        if (xlu_cfg_get_string(cfg, "name", &s, 1) == 0) out.name = s;
        if (xlu_cfg_get_string(cfg, "extra", &s, 1) == 0) out.extra = s;
        const int v = xlu_cfg_get_bounded_long(cfg, "vcpus", 1, 64, &out.vcpus, 0);
        const int m = xlu_cfg_get_bounded_long(cfg, "memory", 4, 4096, &out.memory, 0);
        ok = (v == 0 || v == ESRCH) && (m == 0 || m == ESRCH);
        if (!ok) err = "'" + printable(path) + "': `vcpus` must be 1..64 and `memory` 4..4096 (MiB)";
        // `extra` becomes part of the hypervisor's module line, which it
        // prints: a control character there would forge console lines.
        if (ok && has_control(out.extra)) {
            err = "'" + printable(path) + "': `extra` has a control character: " + printable(out.extra);
            ok = false;
        }
    }
    xlu_cfg_destroy(cfg);
    std::fclose(rep);
    std::free(report);
    return ok;
}

} // namespace pvmmu::run
