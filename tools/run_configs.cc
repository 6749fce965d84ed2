// pvmmu-run --config: domains in xl.cfg syntax (xl_config.h), every file one
// domain, all booted together; a bzImage kernel is unpacked to its ELF first
// (bzimage.h). Each domain is judged by its own end.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bzimage.h"
#include "input_file.h"
#include "run_cli.h"
#include "xl_config.h"

#include <unistd.h>

namespace pvmmu::run {

namespace {

// The ELFs unpacked from bzImages for one run, removed when it ends.
struct Unpacked {
    std::vector<std::string> paths;
    ~Unpacked()
    {
        for (const std::string& p : paths) unlink(p.c_str());
    }
};

// A bzImage kernel (Linux's vmlinuz) is unpacked to its ELF, as xl does
// before loading it, into a temporary file that becomes the module (QEMU
// reads it when the machine starts); any other file goes as it is. False,
// with the reason printed, for a bzImage that cannot be unpacked. max: the
// domain's memory, the most its ELF may unpack to.
bool unpack_kernel(std::string& kernel, const std::vector<uint8_t>& file, Unpacked& made, size_t max)
{
    std::vector<uint8_t> elf;
    std::string why;
    switch (bzimage_unpack(file, elf, why, max)) {
    case BzImage::NotOne: return true;
    case BzImage::Refused:
        std::fprintf(stderr, "pvmmu-run: kernel '%s': %s\n", printable(kernel).c_str(), why.c_str());
        return false;
    case BzImage::Unpacked: break;
    }
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/pvmmu-kernel-XXXXXX";
    const int fd = mkstemp(path.data());
    if (fd < 0) {
        std::fprintf(stderr, "pvmmu-run: kernel '%s': no temporary file for its ELF: %s\n", printable(kernel).c_str(),
                     std::strerror(errno));
        return false;
    }
    made.paths.push_back(path);
    const bool ok = write(fd, elf.data(), elf.size()) == ssize_t(elf.size());
    close(fd);
    if (!ok) {
        std::fprintf(stderr, "pvmmu-run: kernel '%s': could not write its ELF to %s\n", printable(kernel).c_str(),
                     printable(path).c_str());
        return false;
    }
    std::printf("pvmmu-run: kernel %s: a bzImage, its ELF (%zu bytes) unpacked to %s\n", printable(kernel).c_str(),
                elf.size(), printable(path).c_str());
    kernel = path;
    return true;
}

} // namespace

// --config: every file one domain, all booted together (on sim: on qemu).
int run_configs(const RunOptions& o)
{
    const Backend& b = o.platform == "sim" ? kQemu : *backend_of(o.platform);
    if (b.max_domains && o.configs.size() > b.max_domains) {
        std::fprintf(stderr, "pvmmu-run: --platform %s boots at most %zu domain(s) here: give at most %zu --config, "
                     "not %zu\n", b.name, b.max_domains, b.max_domains, o.configs.size());
        return 2;
    }
    std::vector<Domain> doms;
    Unpacked unpacked;
    for (const std::string& path : o.configs) {
        pvmmu::run::DomainConfig c;
        std::string err;
        if (!pvmmu::run::read_xl_config(path, c, err)) {
            std::fprintf(stderr, "pvmmu-run: %s\n", err.c_str());
            return 2;
        }
        for (const std::string& w : c.warnings)
            std::fprintf(stderr, "pvmmu-run: warning: '%s': %s\n", printable(path).c_str(), w.c_str());
        Domain d;
        d.name = c.name;
        d.kernel = find(c.kernel) ? find(c.kernel)->kernel : c.kernel;
        // A kernel larger than the domain's memory could never be loaded.
        const uint64_t cap = uint64_t(c.memory) << 20;
        std::vector<uint8_t> image;
        if (!read_input_file(d.kernel, cap, image, err)) {
            std::fprintf(stderr, "pvmmu-run: '%s': kernel: not a guest program, and the file %s\n",
                         printable(path).c_str(), err.c_str());
            return 2;
        }
        if (!unpack_kernel(d.kernel, image, unpacked, size_t(cap))) return 2;
        // The module's path as it goes to the machine (a bzImage's: the
        // temporary ELF's, under $TMPDIR): a ',' or ' ' would split it.
        if (d.kernel.find_first_of(", ") != std::string::npos) {
            std::fprintf(stderr, "pvmmu-run: '%s': kernel '%s': the module's path %s has a ',' or ' ' in it%s\n",
                         printable(path).c_str(), printable(c.kernel).c_str(), printable(d.kernel).c_str(),
                         d.kernel == c.kernel ? "" : " (set TMPDIR to a directory without them)");
            return 2;
        }
        // The ramdisk, checked as the kernel is: a regular file the domain's
        // memory can hold, not empty, its path one module word.
        if (!c.ramdisk.empty()) {
            std::vector<uint8_t> rd;
            if (!read_input_file(c.ramdisk, cap, rd, err) || rd.empty()) {
                std::fprintf(stderr, "pvmmu-run: '%s': ramdisk: %s\n", printable(path).c_str(),
                             rd.empty() && err.empty() ? ("'" + printable(c.ramdisk) + "' is empty").c_str() : err.c_str());
                return 2;
            }
            if (c.ramdisk.find_first_of(", ") != std::string::npos) {
                std::fprintf(stderr, "pvmmu-run: '%s': ramdisk '%s': a ',' or ' ' in its path would split the module\n",
                             printable(path).c_str(), printable(c.ramdisk).c_str());
                return 2;
            }
            d.ramdisk = c.ramdisk;
        }
        d.extra = c.extra;
        d.vcpus = unsigned(c.vcpus);
        d.frames = static_cast<unsigned long>(c.memory) * 256;
        d.max_grant_frames = c.max_grant_frames;
        d.max_maptrack_frames = c.max_maptrack_frames;
        std::printf("pvmmu-run: domain %zu: %s: kernel %s%s%s, %ld vCPUs, %ld MiB\n", doms.size() + 1,
                    printable(c.name).c_str(), printable(d.kernel).c_str(), d.ramdisk.empty() ? "" : ", ramdisk ",
                    printable(d.ramdisk).c_str(), c.vcpus, c.memory);
        doms.push_back(d);
    }
    std::string why;
    std::vector<DomainEnd> ends;
    std::vector<std::string> kept;   // the hypervisor's lines and any result line
    int code = launch(b, doms, o, false, why, &kept, &ends,
                      [](const std::string& l) { return domain_line(l) || l.rfind("Test result: ", 0) == 0; });
    bool had_result = false;
    for (const std::string& l : kept) had_result = had_result || l.rfind("Test result: ", 0) == 0;
    std::string ended;   // how the domains ended, for a run without a result line
    // Each domain by its own end (pvmmu's console only: Xen's dom0 has the
    // run's verdict alone). The run succeeds only if every domain did.
    if (from_pvmmu(ends) && code < kInterruptedBase) {
        int worst = 0;
        for (size_t i = 0; i < ends.size(); ++i) {
            std::string what;
            const int c = domain_verdict(ends[i], what);
            const std::string label = domain_label(doms, i);
            // Domains start once every one is built: a refusal stops them all.
            if (code == kRefused && c != kRefused)
                std::printf("pvmmu-run: %s: not started: the hypervisor stopped at the refused domain\n", label.c_str());
            else if (c == 0)
                std::printf("pvmmu-run: %s: %s\n", label.c_str(), what.c_str());
            else
                std::printf("pvmmu-run: %s: %s (exit %d): %s\n", label.c_str(), word_of(c), c, printable(what).c_str());
            if (c > worst) worst = c;
            ended += (ended.empty() ? "" : "; ") + label + " " + what;
        }
        if (worst > code) {
            code = worst;
            if (why.empty()) why = "not every domain powered off (above)";
        }
    }
    // A guest that prints no `Test result:` line (a Linux kernel) is judged
    // by how it ended: powered off is a success, anything else the crash
    // code; the verdict says so. A refusal, a skip or an interruption says
    // what it is already.
    if (!had_result && (code == 0 || code == kCrashed)) {
        const bool plain = why.empty() || why.rfind("no `Test result:`", 0) == 0 || why.rfind("not every domain", 0) == 0;
        std::string judged = "no `Test result:` line: judged by the shutdown: ";
        if (!ended.empty()) judged += ended + (plain ? "" : " (" + why + ")");
        else judged += code == 0 ? "powered off" : why;
        why = judged;
    }
    std::printf("pvmmu-run: %s (exit %d)%s%s\n", word_of(code), code, why.empty() ? "" : ": ", printable(why).c_str());
    return code;
}

} // namespace pvmmu::run
