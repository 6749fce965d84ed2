// read_xl_config; see xl_config.h.
#include "xl_config.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/grant_limits.h"
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

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The keys read_xl_config takes (type and builder only with their PV values).
constexpr const char* kUsedKeys[] = {"name", "kernel", "ramdisk", "vcpus", "memory", "extra", "cmdline", "root",
                                     "type", "builder", "max_grant_frames", "max_maptrack_frames"};

// The grant table limits pvmmu-hv takes (core/grant_limits.h): Xen's defaults
// are the most, as on a Xen booted without gnttab_max_frames or
// gnttab_max_maptrack_frames, where xl refuses more; a table has at least one
// frame.
constexpr long kMinGrantFrames = pvmmu::kMinGrantFrames, kMaxGrantFrames = pvmmu::kMaxGrantFrames,
               kMaxMaptrackFrames = pvmmu::kMaxMaptrackFrames;

// Keys without which the domain would boot something other than what the
// file asks: a boot loader that picks the kernel from a disk, firmware, an
// HVM or PVH guest, a PV shim.
constexpr const char* kBootChangingKeys[] = {"bootloader", "bootloader_args", "firmware", "firmware_override",
                                             "pvh", "pvshim", "pvshim_path", "pvshim_cmdline", "pvshim_extra",
                                             "device_tree", "acpi_firmware", "smbios_firmware"};

template <size_t N>
bool listed(const std::string& key, const char* const (&keys)[N])
{
    for (const char* k : keys)
        if (key == k) return true;
    return false;
}

} // namespace

std::vector<std::string> xl_config_keys(const std::string& text)
{
    std::vector<std::string> keys;
    bool start = true;   // at the start of a statement
    int depth = 0;       // inside a list's brackets
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == '#') {
            while (i < text.size() && text[i] != '\n') ++i;
        } else if (c == '\n' || c == ';') {
            start = depth == 0 || start;
            ++i;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            ++i;
        } else if (c == '"' || c == '\'') {
            // A string: to its closing quote; a backslash escapes the next byte.
            for (++i; i < text.size() && text[i] != c; ++i)
                if (text[i] == '\\') ++i;
            ++i;
            start = false;
        } else if (start && depth == 0 && ident_start(c)) {
            size_t end = i;
            while (end < text.size() && ident_char(text[end])) ++end;
            const std::string key = text.substr(i, end - i);
            bool seen = false;
            for (const std::string& k : keys) seen = seen || k == key;
            if (!seen) keys.push_back(key);
            i = end;
            start = false;
        } else {
            if (c == '[') ++depth;
            if (c == ']' && depth > 0) --depth;
            start = false;
            ++i;
        }
    }
    return keys;
}

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
        if (xlu_cfg_get_string(cfg, "ramdisk", &s, 1) == 0) out.ramdisk = s;
        ok = true;
        // The command line as xl builds it (xl_parse.c's rule, xl.cfg(5)):
        // `cmdline` wins over `root` and `extra`.
        std::string root, extra, cmdline;
        const bool has_root = xlu_cfg_get_string(cfg, "root", &s, 1) == 0 && (root = s, true);
        const bool has_extra = xlu_cfg_get_string(cfg, "extra", &s, 1) == 0 && (extra = s, true);
        if (xlu_cfg_get_string(cfg, "cmdline", &s, 1) == 0) {
            out.extra = s;
            if (has_root || has_extra) out.warnings.push_back("`root` and `extra` are ignored in favour of `cmdline`");
        } else if (has_root) {
            out.extra = "root=" + root + (has_extra ? " " + extra : "");
        } else {
            out.extra = extra;
        }
        for (const std::string& key : xl_config_keys(std::string(text.begin(), text.end()))) {
            if (listed(key, kBootChangingKeys)) {
                err = "'" + printable(path) + "': `" + key + "` is set, and pvmmu-run boots the `kernel` directly "
                      "without it: the domain would not be what the file describes";
                ok = false;
                break;
            }
            if (!listed(key, kUsedKeys)) out.warnings.push_back("`" + key + "` is not used by pvmmu-run: ignored");
        }
        // PV is the one type pvmmu builds: `type = "pv"` (or the old
        // `builder = "generic"`) says so, anything else is another guest.
        if (ok && xlu_cfg_get_string(cfg, "type", &s, 1) == 0 && std::string(s) != "pv") {
            err = "'" + printable(path) + "': `type = \"" + printable(s) + "\"`: pvmmu boots PV domains only (type = \"pv\")";
            ok = false;
        }
        if (ok && xlu_cfg_get_string(cfg, "builder", &s, 1) == 0 && std::string(s) != "generic") {
            err = "'" + printable(path) + "': `builder = \"" + printable(s) + "\"`: pvmmu boots PV domains only "
                  "(builder = \"generic\")";
            ok = false;
        }
        const int v = xlu_cfg_get_bounded_long(cfg, "vcpus", 1, 64, &out.vcpus, 0);
        const int m = xlu_cfg_get_bounded_long(cfg, "memory", 4, 4096, &out.memory, 0);
        if (ok && !((v == 0 || v == ESRCH) && (m == 0 || m == ESRCH))) {
            err = "'" + printable(path) + "': `vcpus` must be 1..64 and `memory` 4..4096 (MiB)";
            ok = false;
        }
        const int g = xlu_cfg_get_bounded_long(cfg, "max_grant_frames", kMinGrantFrames, kMaxGrantFrames, &out.max_grant_frames, 1);
        if (ok && g != 0 && g != ESRCH) {
            err = "'" + printable(path) + "': `max_grant_frames` must be a number 1.." + std::to_string(kMaxGrantFrames) +
                  " (Xen's default limit, the most pvmmu takes)";
            ok = false;
        }
        const int t = xlu_cfg_get_bounded_long(cfg, "max_maptrack_frames", 0, kMaxMaptrackFrames,
                                               &out.max_maptrack_frames, 1);
        if (ok && t != 0 && t != ESRCH) {
            err = "'" + printable(path) + "': `max_maptrack_frames` must be a number 0.." +
                  std::to_string(kMaxMaptrackFrames) + " (Xen's default limit, the most pvmmu takes)";
            ok = false;
        }
        // `extra` becomes part of the hypervisor's module line, which it
        // prints: a control character there would forge console lines.
        if (ok && has_control(out.extra)) {
            err = "'" + printable(path) + "': `extra` has a control character: " + printable(out.extra);
            ok = false;
        }
        // The module string's bare word `ramdisk` marks a ramdisk module
        // (boot/main.cc): in a kernel's words it would make that kernel the
        // initial module of the domain before it.
        if (ok && (" " + out.extra + " ").find(" ramdisk ") != std::string::npos) {
            err = "'" + printable(path) + "': the command line has the word `ramdisk`, pvmmu's mark of an initial "
                  "module: give the file as `ramdisk = \"FILE\"`";
            ok = false;
        }
        if (ok && xlu_cfg_get_string(cfg, "ramdisk", &s, 1) == 0 && out.ramdisk.empty()) {
            err = "'" + printable(path) + "': `ramdisk` is empty";
            ok = false;
        }
    }
    xlu_cfg_destroy(cfg);
    std::fclose(rep);
    std::free(report);
    return ok;
}

} // namespace pvmmu::run
