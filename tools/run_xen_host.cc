// The xen-host back end: pvmmu-run in the dom0 of a real
// Xen host creates the guest kernel as a PV domU through Xen's own
// toolstack libraries from libxen-dev: libxenlight creates, unpauses and
// destroys the domain and names its console's pty (which xenconsoled in
// dom0 serves); libxenctrl says what the host is (physinfo), whether the
// domain has shut down and why, and the CPU time it used. This is the path
// of a user with a Xen host: `./pvmmu run|bench ... --platform xen-host`.
//
// A domU writes its console to the console ring (guest/platform/xenpv), so
// the run reads the pty. Xen leaves a shut-down domain in place (libxl's
// callers, such as xl, act on on_poweroff), so the monitor destroys it and
// then writes the line that ends the run: the shutdown reason as the status
// pvmmu's isa-debug-exit gives for the same end.
#include "run_backend.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

extern "C" {
#include <libxl.h>
#include <libxl_utils.h>
#include <xenctrl.h>
#include <xentoollog.h>
}

namespace pvmmu::run {

namespace {

// The monitor's last line (see above), one per shutdown reason.
const std::vector<Ending> kXenHostEndings = {
    {"pvmmu-run: xen-host: domain powered off", kPoweroffStatus, 0},
    {"pvmmu-run: xen-host: domain crashed", kCrashStatus, 0},
    {"pvmmu-run: xen-host: domain shut down", kRebootStatus, 0},   // reboot, suspend, watchdog, ...
    {"pvmmu-run: xen-host: cannot", kPanicStatus, 0},              // the monitor failed: its reason
};

struct Spec {
    std::string name, kernel, cmdline, ramdisk;
    unsigned long vcpus = 1, memkb = 16384;
};

std::string lacks(const std::vector<Domain>& doms)
{
    for (const Domain& d : doms) {
        if (d.peer_frames) return "needs a second domain (pvmmu's peer=); xen-host creates one domain";
        if (d.deny) return "needs pvmmu's deny= policy (PVMMU_DENY_* features refused), which Xen does not have";
    }
    return "";
}

// Whether this is the control domain of a Xen host: the kernel's xenfs says
// so in /proc/xen/capabilities.
bool in_dom0()
{
    std::ifstream f("/proc/xen/capabilities");
    std::string caps;
    return std::getline(f, caps) && caps.find("control_d") != std::string::npos;
}

// Writes a whole line to the console descriptor.
void say(int fd, const std::string& line)
{
    const std::string l = line + "\n";
    for (size_t at = 0; at < l.size();) {
        const ssize_t n = write(fd, l.data() + at, l.size() - at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        at += size_t(n);
    }
}

// A context of libxenlight whose messages go to stderr (the console, in the monitor).
libxl_ctx* open_libxl()
{
    auto* lg = xtl_createlogger_stdiostream(stderr, XTL_ERROR, 0);
    libxl_ctx* ctx = nullptr;
    if (!lg || libxl_ctx_alloc(&ctx, LIBXL_VERSION, 0, reinterpret_cast<xentoollog_logger*>(lg)) != 0) return nullptr;
    return ctx;
}

// Destroys the domain called `name` if there is one (a run that timed out).
void destroy_by_name(const std::string& name)
{
    libxl_ctx* ctx = open_libxl();
    uint32_t domid;
    if (ctx && libxl_name_to_domid(ctx, name.c_str(), &domid) == 0) libxl_domain_destroy(ctx, domid, nullptr);
    libxl_ctx_free(ctx);
}

// What the host is, from libxenctrl: Xen's version, its CPUs and free memory.
void describe_host(int fd, xc_interface* xc)
{
    xc_physinfo_t pi{};
    const int v = xc_version(xc, XENVER_version, nullptr);
    if (xc_physinfo(xc, &pi) != 0) return;
    const unsigned long page_kib = 4;
    say(fd, "pvmmu-run: xen-host: Xen " + std::to_string(v >> 16) + "." + std::to_string(v & 0xffff) + ", " +
                std::to_string(pi.nr_cpus) + " CPUs, " + std::to_string(pi.free_pages * page_kib / 1024) +
                " MiB free");
}

// The domain as libxl creates a PV guest from a kernel file (what xl does
// for `type = "pv"`, `kernel`, `ramdisk`, `extra`, `vcpus`, `memory`).
bool make_config(libxl_ctx* ctx, const Spec& s, libxl_domain_config& cfg)
{
    libxl_domain_config_init(&cfg);
    cfg.c_info.type = LIBXL_DOMAIN_TYPE_PV;
    cfg.c_info.name = strdup(s.name.c_str());
    libxl_domain_build_info_init_type(&cfg.b_info, LIBXL_DOMAIN_TYPE_PV);
    cfg.b_info.max_vcpus = int(s.vcpus);
    if (libxl_cpu_bitmap_alloc(ctx, &cfg.b_info.avail_vcpus, int(s.vcpus)) != 0) return false;
    for (unsigned long i = 0; i < s.vcpus; ++i) libxl_bitmap_set(&cfg.b_info.avail_vcpus, int(i));
    cfg.b_info.max_memkb = cfg.b_info.target_memkb = s.memkb;
    cfg.b_info.kernel = strdup(s.kernel.c_str());
    cfg.b_info.cmdline = strdup(s.cmdline.c_str());
    if (!s.ramdisk.empty()) cfg.b_info.ramdisk = strdup(s.ramdisk.c_str());
    return true;
}

// The domain's console pty, raw (no echo, no line editing): xenconsoled
// names it in xenstore once it has seen the domain, so it is asked again
// for a while.
int open_console(libxl_ctx* ctx, uint32_t domid)
{
    char* path = nullptr;
    for (int i = 0; i < 200 && libxl_console_get_tty(ctx, domid, 0, LIBXL_CONSOLE_TYPE_PV, &path) != 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (!path) return -1;
    const int fd = open(path, O_RDWR | O_NOCTTY | O_NONBLOCK);
    free(path);
    termios t;
    if (fd >= 0 && tcgetattr(fd, &t) == 0) {
        cfmakeraw(&t);
        tcsetattr(fd, TCSANOW, &t);
    }
    return fd;
}

// Copies what the pty has to the console; false at its end (the pty closed).
bool pump(int tty, int out, int wait_ms)
{
    pollfd p{tty, POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) return true;
    char buf[4096];
    const ssize_t n = read(tty, buf, sizeof(buf));
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    if (n == 0) return false;
    for (ssize_t at = 0; at < n;) {
        const ssize_t w = write(out, buf + at, size_t(n - at));
        if (w <= 0) return false;
        at += w;
    }
    return true;
}

// The ending line for a domain that shut down with `reason`.
std::string ending_for(unsigned reason)
{
    switch (reason) {
    case SHUTDOWN_poweroff: return "pvmmu-run: xen-host: domain powered off";
    case SHUTDOWN_crash: return "pvmmu-run: xen-host: domain crashed";
    default: return "pvmmu-run: xen-host: domain shut down (reason " + std::to_string(reason) + ")";
    }
}

// The monitor process: creates the domain paused, attaches to its console,
// unpauses it, copies the console until the domain has shut down, then
// destroys it and writes the ending line. Its exit status is not judged.
int monitor(const Spec& s, int out)
{
    libxl_ctx* ctx = open_libxl();
    xc_interface* xc = xc_interface_open(nullptr, nullptr, 0);
    if (!ctx || !xc) {
        say(out, "pvmmu-run: xen-host: cannot open libxenlight or libxenctrl (is this dom0, as root?)");
        return 1;
    }
    describe_host(out, xc);
    libxl_domain_config cfg;
    constexpr uint32_t kNoDomain = INVALID_DOMID;
    uint32_t domid = kNoDomain;
    if (!make_config(ctx, s, cfg) || libxl_domain_create_new(ctx, &cfg, &domid, nullptr, nullptr) != 0) {
        if (domid != kNoDomain) libxl_domain_destroy(ctx, domid, nullptr);
        say(out, "pvmmu-run: xen-host: cannot create the domain (libxenlight's reason above)");
        return 1;
    }
    libxl_domain_config_dispose(&cfg);
    const int tty = open_console(ctx, domid);
    if (tty < 0) {
        libxl_domain_destroy(ctx, domid, nullptr);
        say(out, "pvmmu-run: xen-host: cannot open the domain's console (is xenconsoled running?)");
        return 1;
    }
    say(out, "pvmmu-run: xen-host: domain " + s.name + " is domid " + std::to_string(domid));
    libxl_domain_unpause(ctx, domid, nullptr);
    xc_dominfo_t info{};
    for (;;) {
        const bool open = pump(tty, out, 100);
        if (xc_domain_getinfo(xc, domid, 1, &info) != 1 || info.domid != domid) {
            say(out, "pvmmu-run: xen-host: cannot find domain " + std::to_string(domid) + " any more");
            return 1;
        }
        if (info.shutdown || info.dying) break;
        if (!open) {
            libxl_domain_destroy(ctx, domid, nullptr);
            say(out, "pvmmu-run: xen-host: cannot read the domain's console any more (xenconsoled gone?)");
            return 1;
        }
    }
    // The guest waited for xenconsoled to take its last bytes before it shut
    // down; what is still on the way through the pty comes now.
    for (auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
         std::chrono::steady_clock::now() < until && pump(tty, out, 50);) {
    }
    close(tty);
    char secs[64];
    std::snprintf(secs, sizeof(secs), "%.3f", double(info.cpu_time) / 1e9);
    say(out, "pvmmu-run: xen-host: domain " + std::to_string(domid) + " used " + secs + " s of CPU time");
    libxl_domain_destroy(ctx, domid, nullptr);
    say(out, info.shutdown ? ending_for(info.shutdown_reason)
                           : std::string("pvmmu-run: xen-host: domain crashed (it is dying, not shut down)"));
    xc_interface_close(xc);
    libxl_ctx_free(ctx);
    return 0;
}

class XenHostSession final : public Session {
public:
    explicit XenHostSession(Spec s) : spec_(std::move(s)) {}
    int start(int console_fd, std::string& why) override
    {
        pid_ = fork();
        if (pid_ < 0) {
            why = std::string("fork: ") + std::strerror(errno);
            close(console_fd);
            return kCrashed;
        }
        if (pid_ == 0) {
            setpgid(0, 0);
            // Not the launcher's terminal: a background process group that
            // touched it would be stopped (run_child.cc).
            if (const int null_fd = open("/dev/null", O_RDONLY); null_fd >= 0) dup2(null_fd, STDIN_FILENO);
            dup2(console_fd, STDOUT_FILENO);   // libxl's messages, too
            dup2(console_fd, STDERR_FILENO);
            _exit(monitor(spec_, console_fd));
        }
        close(console_fd);
        return 0;
    }
    void stop() override
    {
        if (pid_ <= 0) return;
        // After its last line the monitor only lets go of its libraries.
        int st;
        pid_t r = 0;
        for (int i = 0; i < 100 && (r = waitpid(pid_, &st, WNOHANG)) == 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (r == 0) {
            // Still running: it timed out, or the run ended early. Its domain goes too.
            kill(-pid_, SIGKILL);
            while (waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
            }
            destroy_by_name(spec_.name);
        }
        pid_ = -1;
    }
    std::string gone() override { return "the xen-host monitor ended without its last line"; }

private:
    Spec spec_;
    pid_t pid_ = -1;
};

int prepare(const std::vector<Domain>& doms, const Options&, Launch& l, std::string& why)
{
    if (!in_dom0()) {
        why = "not in the dom0 of a Xen host (/proc/xen/capabilities does not say control_d): run it there";
        return kSkipped;
    }
    const Domain& d = doms.front();
    Spec s;
    const size_t slash = d.kernel.find_last_of('/');
    std::string base = d.name.empty() ? d.kernel.substr(slash == std::string::npos ? 0 : slash + 1) : d.name;
    for (char& c : base)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '-';
    s.name = "pvmmu-" + base + "-" + std::to_string(getpid());
    s.kernel = d.kernel;
    s.cmdline = d.extra;
    s.ramdisk = d.ramdisk;
    s.vcpus = d.vcpus;
    s.memkb = d.frames * 4;
    l.session = std::make_unique<XenHostSession>(std::move(s));
    l.endings = kXenHostEndings;
    return 0;
}

} // namespace

const Backend kXenHost = {"xen-host", 120, 1, "", " (the host's own Xen runs the domain)", lacks, prepare};

} // namespace pvmmu::run
