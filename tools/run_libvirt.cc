// The libvirt back end: pvmmu's machine (run_libvirt_xml.cc) started as a
// transient domain through libvirt's C API on any URI; by default the
// embedded QEMU driver rooted in the build tree, so no daemon runs.
// The domain starts paused with its console opened, so no line is lost, then
// resumes. The run ends at pvmmu-hv's own last line, which names the code
// isa-debug-exit would have given (kPvmmuEndings), as under Bochs; then the
// machine ends itself (ACPI soft-off, or pvpanic after a panic: the domain's
// XML has no isa-debug-exit) and the launcher says how libvirt saw it end:
// "shut off (shutdown)" or "crashed (panicked)", virsh's words.
#include "run_libvirt.h"
#include "run_libvirt_host.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

namespace pvmmu::run {

const bool kLibvirtBuilt = true;

namespace {

std::string libvirt_error()
{
    const virErrorPtr e = virGetLastError();
    return e && e->message ? e->message : "unknown libvirt error";
}

// libvirt prints every error on stderr by default; the launcher says them once, in its verdict.
void quiet_errors(void*, virErrorPtr) {}

// The embedded driver reads ROOT/etc/qemu.conf. QEMU's output must go to a
// file there: the default handler, virtlogd, is a daemon. QEMU runs as the
// launcher's user: Debian's default, libvirt-qemu, exists only where the
// daemon's package (libvirt-daemon-system) made it.
bool prepare_embed_root(const std::string& uri, std::string& why)
{
    const std::string prefix = "qemu:///embed?";
    if (uri.rfind(prefix, 0) != 0) return true;
    const size_t at = uri.find("root=");
    if (at == std::string::npos) return true;
    const std::string root = uri.substr(at + 5, uri.find('&', at) - (at + 5));
    const std::filesystem::path conf = std::filesystem::path(root) / "etc" / "qemu.conf";
    std::error_code ec;
    // The serial log's folder (libvirt_prepare), which QEMU does not make.
    std::filesystem::create_directories(std::filesystem::path(root) / "log", ec);
    if (std::filesystem::exists(conf, ec)) return true;
    std::filesystem::create_directories(conf.parent_path(), ec);
    FILE* f = std::fopen(conf.c_str(), "w");
    if (!f) {
        why = "cannot write " + conf.string();
        return false;
    }
    std::fprintf(f, "# Written by pvmmu-run --platform libvirt: QEMU's output in a file (no virtlogd),\n"
                 "# QEMU as the launcher's user.\n"
                 "stdio_handler = \"file\"\nuser = \"+%u\"\ngroup = \"+%u\"\n", unsigned(getuid()), unsigned(getgid()));
    return std::fclose(f) == 0;
}

// A libvirt domain as the launcher's session: its console copied to the
// launcher's descriptor by libvirt's event loop, which a thread of ours runs.
class LibvirtSession final : public Session {
public:
    // The domain's XML names pvmmu-hv and the kernels as this machine has
    // them; a remote host's are uploaded first (upload_images).
    LibvirtSession(std::string uri, std::string name, std::string serial_log, std::vector<Domain> doms,
                   std::string accel, const Options& o)
        : uri_(std::move(uri)), name_(std::move(name)), serial_log_(std::move(serial_log)), doms_(std::move(doms)),
          accel_(std::move(accel)), hv_args_(o.hv_args), pool_(o.pool), quiet_(o.quiet),
          xml_(libvirt_domain_xml(doms_, accel_, name_, PVMMU_HV_IMAGE, serial_log_, hv_args_))
    {
    }
    ~LibvirtSession() override { stop(); }

    int start(int console_fd, std::string& why) override
    {
        fd_ = console_fd;
        fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
        static std::once_flag once;
        std::call_once(once, [] {
            // libvirt's own log (the embedded driver's warnings: a root
            // QEMU, custom argv) in a file, unless the user chose where
            // (LIBVIRT_LOG_OUTPUTS, read by virInitialize).
            std::error_code ec;
            std::filesystem::create_directories(PVMMU_LIBVIRT_ROOT, ec);
            setenv("LIBVIRT_LOG_OUTPUTS", "3:file:" PVMMU_LIBVIRT_ROOT "/pvmmu-run.log", 0);
            virInitialize();
            virSetErrorFunc(nullptr, quiet_errors);
            virEventRegisterDefaultImpl();
        });
        loop_ = std::thread([this] {
            while (!quit_) virEventRunDefaultImpl();
        });
        if (!prepare_embed_root(uri_, why)) return kCrashed;
        conn_ = virConnectOpen(uri_.c_str());
        if (!conn_) {
            why = "cannot connect to " + uri_ + ": " + libvirt_error() +
                  (uri_.rfind("qemu:///embed", 0) == 0 ? " (libvirt-daemon-driver-qemu: ./pvmmu deps)"
                                                       : " (is libvirtd running there?)");
            return kSkipped;
        }
        if ((libvirt_uri_remote(uri_) || !pool_.empty()) && !upload_images(why)) return kCrashed;
        lifecycle_ = virConnectDomainEventRegisterAny(conn_, nullptr, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                                      VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), this, nullptr);
        // Paused, so the console is open before the first line; destroyed
        // with our connection, so a launcher that dies leaves no machine.
        // Not every driver takes them: the embedded one (libvirt 9.0) has no
        // autodestroy, test:/// neither flag, and then the domain starts
        // with fewer (running: a console line may be lost). A start that
        // fails for another reason fails again, with the same error.
        const unsigned kPaused = VIR_DOMAIN_START_PAUSED, kAutodestroy = VIR_DOMAIN_START_AUTODESTROY;
        bool paused = true;
        for (const unsigned flags : {kPaused | kAutodestroy, kPaused, 0u}) {
            dom_ = virDomainCreateXML(conn_, xml_.c_str(), flags);
            paused = flags & kPaused;
            if (dom_) break;
        }
        if (!dom_) {
            why = "libvirt cannot start the domain: " + libvirt_error();
            return kCrashed;
        }
        stream_ = virStreamNew(conn_, VIR_STREAM_NONBLOCK);
        if (!stream_ || virDomainOpenConsole(dom_, nullptr, stream_, 0) < 0 ||
            virStreamEventAddCallback(stream_, VIR_STREAM_EVENT_READABLE | VIR_STREAM_EVENT_ERROR |
                                      VIR_STREAM_EVENT_HANGUP, on_console, this, nullptr) < 0) {
            why = "libvirt cannot open the domain's console: " + libvirt_error();
            return kCrashed;
        }
        if (paused && virDomainResume(dom_) < 0) {
            why = "libvirt cannot resume the domain: " + libvirt_error();
            return kCrashed;
        }
        return 0;
    }

    // pvmmu-hv's last line is out: the machine powers off or reports its
    // panic right after (TCG included, well within the wait). A domain kept
    // crashed (<on_crash>preserve) stays: its state says it.
    void settle() override
    {
        settling_ = true;   // the console's reader is gone: what follows is dropped, not waited on
        std::string how;
        {
            std::unique_lock<std::mutex> g(mu_);
            ended_cv_.wait_for(g, std::chrono::seconds(kSettleSeconds), [this] { return !state_.empty(); });
            how = state_;
        }
        if (how.empty() && dom_) how = state_of(dom_);
        if (how.empty()) how = "still running " + std::to_string(kSettleSeconds) + " s after pvmmu's last line; destroyed";
        if (!quiet_) std::printf("pvmmu-run: libvirt: domain %s ended %s\n", name_.c_str(), how.c_str());
        std::fflush(stdout);
        std::lock_guard<std::mutex> g(mu_);
        state_ = how;
    }

    // The state libvirt keeps for the domain, "" while it runs.
    static std::string state_of(virDomainPtr dom)
    {
        int state = 0, reason = 0;
        if (virDomainGetState(dom, &state, &reason, 0) < 0) return "gone (no lifecycle event seen)";
        return libvirt_state_words(state, reason);
    }

    void stop() override
    {
        stopping_ = true;
        // The event loop runs on meanwhile: the driver needs it to see QEMU go.
        if (dom_) {
            if (virDomainIsActive(dom_) == 1) virDomainDestroy(dom_);
            virDomainFree(dom_);
            dom_ = nullptr;
        }
        {
            // The loop's thread may be in on_console: it holds mu_ throughout.
            std::lock_guard<std::mutex> g(mu_);
            if (stream_) {
                if (!stream_done_) {
                    virStreamEventRemoveCallback(stream_);
                    virStreamAbort(stream_);
                }
                virStreamFree(stream_);
                stream_ = nullptr;
                stream_done_ = true;
            }
            close_console();
        }
        if (!serial_log_.empty()) std::remove(serial_log_.c_str());
        uploads_.remove();
        if (conn_) {
            if (lifecycle_ >= 0) virConnectDomainEventDeregisterAny(conn_, lifecycle_);
            virConnectClose(conn_);
            conn_ = nullptr;
        }
        if (crash_timer_ >= 0) virEventRemoveTimeout(crash_timer_);   // gone already, or it must not fire
        if (loop_.joinable()) {
            quit_ = true;
            // One more turn of the loop, so it sees quit_.
            virEventAddTimeout(0, [](int timer, void*) { virEventRemoveTimeout(timer); }, nullptr, nullptr);
            loop_.join();
        }
    }

    std::string gone() override
    {
        std::lock_guard<std::mutex> g(mu_);
        return state_.empty() ? "its console closed" : "libvirt: the domain ended " + state_;
    }

private:
    // A remote host cannot read our files: pvmmu-hv and each domain's kernel
    // (and ramdisk) become volumes of its storage pool for this run (--pool, else
    // "default"), and the XML names their paths there. A local URI does
    // the same where --pool names a pool.
    bool upload_images(std::string& why)
    {
        const std::string pool = pool_.empty() ? "default" : pool_;
        std::string hv;
        if (!uploads_.upload(conn_, pool, PVMMU_HV_IMAGE, name_ + "-pvmmu-hv", hv, why)) return false;
        std::vector<Domain> there = doms_;
        for (size_t i = 0; i < there.size(); ++i) {
            const std::string vol = name_ + "-domain" + std::to_string(i);
            if (!uploads_.upload(conn_, pool, doms_[i].kernel, vol, there[i].kernel, why)) return false;
            if (!doms_[i].ramdisk.empty() &&
                !uploads_.upload(conn_, pool, doms_[i].ramdisk, vol + "-ramdisk", there[i].ramdisk, why))
                return false;
        }
        xml_ = libvirt_domain_xml(there, accel_, name_, hv, serial_log_, hv_args_);
        return true;
    }

    // With mu_ held.
    void close_console()
    {
        if (fd_ >= 0) close(fd_);
        fd_ = -1;
    }

    // Everything reaches the launcher, unless it stopped reading. With mu_ held.
    void write_console(const char* p, size_t n)
    {
        while (n && !stopping_ && !settling_) {
            const ssize_t w = write(fd_, p, n);
            if (w > 0) {
                p += w, n -= size_t(w);
            } else if (w < 0 && errno == EAGAIN) {
                pollfd q{fd_, POLLOUT, 0};
                poll(&q, 1, 100);
            } else if (!(w < 0 && errno == EINTR)) {
                return;
            }
        }
    }

    static void on_console(virStreamPtr st, int, void* opaque)
    {
        auto* s = static_cast<LibvirtSession*>(opaque);
        std::lock_guard<std::mutex> g(s->mu_);
        if (s->stream_done_) return;   // stop() took the stream
        char buf[4096];
        for (;;) {
            const int n = virStreamRecv(st, buf, sizeof(buf));
            if (n == -2) return;   // nothing more for now
            if (n > 0) {
                s->write_console(buf, size_t(n));
                s->sent_ += size_t(n);
                continue;
            }
            // The end of the console (0), or its error: QEMU is gone.
            virStreamEventRemoveCallback(st);
            if (n == 0) virStreamFinish(st);
            else virStreamAbort(st);
            s->stream_done_ = true;
            s->send_rest_of_log();
            s->close_console();
            return;
        }
    }

    // A QEMU that exits right after its last line (the power-off) closes
    // the pty before libvirt has read it all; the hang-up drops what was
    // left. The serial log QEMU wrote has every byte: send what the stream
    // did not. With mu_ held.
    void send_rest_of_log()
    {
        if (serial_log_.empty()) return;
        FILE* f = std::fopen(serial_log_.c_str(), "r");
        if (!f) return;
        char buf[4096];
        if (std::fseek(f, long(sent_), SEEK_SET) == 0) {
            for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;) write_console(buf, n);
        }
        std::fclose(f);
    }

    static int on_lifecycle(virConnectPtr, virDomainPtr dom, int event, int detail, void* opaque)
    {
        auto* s = static_cast<LibvirtSession*>(opaque);
        if (s->name_ != virDomainGetName(dom)) return 0;
        const std::string how = libvirt_event_words(event, detail);
        if (!how.empty()) {
            std::lock_guard<std::mutex> g(s->mu_);
            if (s->state_.empty() || !s->stopping_) s->state_ = how;
            s->ended_cv_.notify_all();
        }
        // A crashed domain is kept (<on_crash>preserve), and so is its
        // console: end the console a moment later (the lines before the
        // panic may still be on their way), so a run whose last line was not
        // one of pvmmu's endings ends now, not at its timeout.
        // The timer is removed in stop(): libvirt's loop outlives the session.
        if (event == VIR_DOMAIN_EVENT_CRASHED && s->crash_timer_ < 0)
            s->crash_timer_ = virEventAddTimeout(kCrashedConsoleMs, [](int timer, void* session) {
                auto* self = static_cast<LibvirtSession*>(session);
                virEventRemoveTimeout(timer);
                self->end_console();
            }, s, nullptr);
        return 0;
    }

    // Runs on the loop's thread, like on_console.
    void end_console()
    {
        std::lock_guard<std::mutex> g(mu_);
        if (stream_done_ || !stream_) return;
        virStreamEventRemoveCallback(stream_);
        virStreamAbort(stream_);
        stream_done_ = true;
        send_rest_of_log();
        close_console();
    }

    static constexpr int kCrashedConsoleMs = 1000;

    static constexpr int kSettleSeconds = 10;

    const std::string uri_, name_, serial_log_;
    const std::vector<Domain> doms_;
    const std::string accel_, hv_args_, pool_;
    const bool quiet_;
    std::string xml_;
    PoolUploads uploads_;
    virConnectPtr conn_ = nullptr;
    virDomainPtr dom_ = nullptr;
    virStreamPtr stream_ = nullptr;
    int lifecycle_ = -1;
    std::atomic<int> crash_timer_{-1};   // on_lifecycle's one-shot after a crash
    std::thread loop_;
    std::atomic<bool> quit_{false}, stopping_{false}, settling_{false};
    std::mutex mu_;   // stream_ and fd_ in use, stream_done_, sent_, state_: the loop's thread and the launcher's
    std::condition_variable ended_cv_;   // state_ set
    int fd_ = -1;
    bool stream_done_ = false;
    size_t sent_ = 0;   // bytes of the console sent
    std::string state_;   // how libvirt saw the domain end: "shut off (shutdown)", "crashed (panicked)"
};

bool local(const std::string& uri) { return uri.rfind("qemu:///", 0) == 0; }

} // namespace

// virsh's words (virsh domstate --reason), in the order of libvirt-domain.h's
// enums, which are part of its stable ABI.
std::string libvirt_event_words(int event, int detail)
{
    static const char* const kStopped[] = {"shutdown", "destroyed", "crashed", "migrated", "saved", "failed",
                                           "from snapshot"};
    static const char* const kCrashedWhy[] = {"panicked", "crashloaded"};
    auto word = [detail](const auto& words) {
        return detail >= 0 && size_t(detail) < std::size(words) ? words[detail] : "unknown";
    };
    if (event == VIR_DOMAIN_EVENT_STOPPED) return std::string("shut off (") + word(kStopped) + ")";
    if (event == VIR_DOMAIN_EVENT_CRASHED) return std::string("crashed (") + word(kCrashedWhy) + ")";
    return "";
}

std::string libvirt_state_words(int state, int reason)
{
    if (state == VIR_DOMAIN_CRASHED) return reason == VIR_DOMAIN_CRASHED_PANICKED ? "crashed (panicked)" : "crashed";
    if (state == VIR_DOMAIN_SHUTOFF) {
        static const char* const kShutoff[] = {"unknown", "shutdown", "destroyed", "crashed", "migrated", "saved",
                                               "failed", "from snapshot", "daemon"};
        return std::string("shut off (") +
               (reason >= 0 && size_t(reason) < std::size(kShutoff) ? kShutoff[reason] : "unknown") + ")";
    }
    if (state == VIR_DOMAIN_PAUSED && reason == VIR_DOMAIN_PAUSED_CRASHED) return "paused (crashed)";
    return "";
}

int libvirt_prepare(const std::vector<Domain>& doms, const Options& o, Launch& l, std::string& why)
{
    const std::string uri = o.platform_arg.empty() ? libvirt_default_uri() : o.platform_arg;
    // Where the domain runs here, the accelerator --platform qemu would take
    // (KVM only where it passes the self-test); another host's KVM is not
    // known here, so TCG unless asked.
    std::string accel = o.accel.empty() ? "tcg" : o.accel;
    if (local(uri)) {
        const AccelChoice a = pick_accel(o.accel);
        if (a.accel.empty()) {
            why = a.note;
            return kSkipped;
        }
        accel = a.accel;
    }
    const std::string name = libvirt_domain_name(doms);
    if (!o.quiet) std::printf("pvmmu-run: libvirt: domain %s on %s (%s)\n", name.c_str(), uri.c_str(), accel.c_str());
    std::fflush(stdout);
    // The serial log, where the embedded driver's QEMU runs here as we do.
    const std::string embed = "qemu:///embed?root=";
    const std::string serial_log = uri.rfind(embed, 0) == 0 && uri.find('&') == std::string::npos
                                       ? std::filesystem::absolute(uri.substr(embed.size())).string() + "/log/" +
                                             name + "-serial0.log"
                                       : "";
    l.session = std::make_unique<LibvirtSession>(uri, name, serial_log, doms, accel, o);
    l.endings = kPvmmuEndings;
    return 0;
}

} // namespace pvmmu::run
