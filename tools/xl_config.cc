// read_xl_config; see xl_config.h.
#include "xl_config.h"

#include <cstdio>

extern "C" {
#include <libxlutil.h>
}

namespace pvmmu::run {

bool read_xl_config(const std::string& path, DomainConfig& out, std::string& err)
{
    XLU_Config* cfg = xlu_cfg_init(stderr, path.c_str());
    if (!cfg) {
        err = "out of memory";
        return false;
    }
    bool ok = false;
    const char* s = nullptr;
    out = DomainConfig{};
    const size_t slash = path.find_last_of('/');
    out.name = path.substr(slash == std::string::npos ? 0 : slash + 1);
    if (xlu_cfg_readfile(cfg, path.c_str()) != 0) {
        err = "cannot read or parse " + path;
    } else if (xlu_cfg_get_string(cfg, "kernel", &s, 0) != 0) {
        err = path + ": no `kernel`";
    } else {
        out.kernel = s;
        if (xlu_cfg_get_string(cfg, "name", &s, 1) == 0) out.name = s;
        if (xlu_cfg_get_string(cfg, "extra", &s, 1) == 0) out.extra = s;
        const int v = xlu_cfg_get_bounded_long(cfg, "vcpus", 1, 64, &out.vcpus, 0);
        const int m = xlu_cfg_get_bounded_long(cfg, "memory", 4, 4096, &out.memory, 0);
        ok = (v == 0 || v == ESRCH) && (m == 0 || m == ESRCH);
        if (!ok) err = path + ": `vcpus` must be 1..64 and `memory` 4..4096 (MiB)";
    }
    xlu_cfg_destroy(cfg);
    return ok;
}

} // namespace pvmmu::run
