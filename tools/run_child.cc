// The launcher's child process and the judgement of its console (docs/design.md §6, the
// Xen Test Framework's runner), shared by every platform: the last
// `Test result: SUCCESS|SKIP|ERROR|FAILURE` line gives 0/3/4/5 when the run
// ends with the status that goes with it; a crash, a run with no result, a
// status other than the expected one, or one that outlives --timeout gives 6
// (its process group is killed, so a hung guest never hangs the launcher).
// The launcher keeps its terminal: the child's input is a pipe the launcher
// holds, never the terminal, so a run typed at a shell is not stopped by job
// control (a background process group reading its terminal gets SIGTTIN) and
// Ctrl-C reaches the launcher, which ends the child's group and cleans up.
// With --console the launcher forwards its own input into that pipe
// (run_input.h): the terminal in raw mode, Ctrl-] to end the run.
#include "run_backend.h"
#include "run_input.h"

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace pvmmu::run {

namespace {

volatile sig_atomic_t g_interrupted = 0;

void on_interrupt(int sig)
{
    if (!g_interrupted) g_interrupted = sig;
}

int code_of(const std::string& last)
{
    static const struct {
        const char* word;
        int code;
    } kResults[] = {{"SUCCESS", 0}, {"SKIP", 3}, {"ERROR", 4}, {"FAILURE", 5}};
    const std::string prefix = "Test result: ";
    if (last.compare(0, prefix.size(), prefix) != 0) return kCrashed;
    const std::string word = last.substr(prefix.size());
    for (const auto& r : kResults)
        if (word == r.word) return r.code;
    return kCrashed;
}

bool is_result(const std::string& l) { return l.rfind("Test result: ", 0) == 0; }

// The status an ending line stands for: its own, or QEMU's for the
// isa-debug-exit code it names.
int status_of(const Ending& e, const std::string& line)
{
    if (e.status >= 0) return e.status;
    const size_t at = line.find("code 0x");
    if (at == std::string::npos) return kCrashed;
    return int(std::strtoul(line.c_str() + at + 7, nullptr, 16) << 1 | 1);
}

// The last lines of the emulator's own output, when the console is a file
// and the run went wrong before the guest said why.
void show_tail(const std::string& path)
{
    FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return;
    std::vector<std::string> lines;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f)) {
        lines.emplace_back(buf);
        if (lines.size() > 10) lines.erase(lines.begin());
    }
    std::fclose(f);
    std::printf("pvmmu-run: the emulator's last lines:\n");
    for (std::string& l : lines) {
        if (!l.empty() && l.back() == '\n') l.pop_back();
        std::printf("| %s\n", printable(l).c_str());
    }
}

// Whether a file the child wrote reached the cap (RLIMIT_FSIZE) it ran under.
bool at_cap(const std::string& path, const Options& o)
{
    struct stat st = {};
    return stat(path.c_str(), &st) == 0 && uint64_t(st.st_size) >= o.file_cap;
}

} // namespace

void catch_interrupts()
{
    struct sigaction sa = {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;   // no SA_RESTART: the wait for the console returns EINTR
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

int interrupted() { return g_interrupted; }

Launch::~Launch()
{
    if (scratch.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
}

int run_child(const Launch& l, const Options& o, int expect_status, bool need_result, std::string& why,
              std::vector<std::string>* console, bool (*keep)(const std::string&))
{
    auto record = [&](const std::string& line) {
        if (console && (!keep || (console->size() < kMaxKeptLines && keep(line)))) console->push_back(line);
    };
    const bool from_file = !l.console_file.empty();
    const std::string child_log = l.console_file + ".log";   // the emulator's own output
    // The console comes in on `in`; the child (or the session) writes to
    // `out`: a pipe, or the emulator's own log when the console is a file.
    int in = -1, out = -1;
    if (from_file) {
        in = open(l.console_file.c_str(), O_RDONLY | O_CREAT, 0644);
        out = open(child_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    } else if (int fds[2]; pipe(fds) == 0) {
        in = fds[0];
        out = fds[1];
    }
    // The child's input: a pipe whose writing end the launcher holds for the
    // run, and into which --console forwards the launcher's input.
    int input[2] = {-1, -1};
    if (in < 0 || out < 0 || pipe2(input, O_CLOEXEC) != 0) {
        why = std::string(from_file ? l.console_file + ": " : "pipe: ") + std::strerror(errno);
        if (in >= 0) close(in);
        if (out >= 0) close(out);
        return kCrashed;
    }
    struct InputPipe {
        int fd;
        ~InputPipe() { close(fd); }
    } const keep_input{input[1]};
    pid_t pid = -1;
    if (l.session) {
        if (const int rc = l.session->start(out, why)) {
            l.session->stop();
            close(in);
            close(input[0]);
            return rc;
        }
    }
    const pid_t launcher = getpid();
    if (!l.session && (pid = fork()) < 0) {
        why = std::string("fork: ") + std::strerror(errno);
        close(in);
        close(out);
        close(input[0]);
        return kCrashed;
    }
    if (pid == 0) {
        setpgid(0, 0);   // its own process group, so a kill reaches every thread and child
        // The emulator ends with the launcher even when no handler runs (SIGKILL,
        // SIGQUIT, SIGPIPE of `| head`): no machine left running on its own.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != launcher) _exit(127);
        // Signals the launcher catches are back to their defaults in the child
        // (execv does that for caught ones; ignored ones would stay ignored).
        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGTTIN, SIGTTOU}) signal(sig, SIG_DFL);
        dup2(input[0], STDIN_FILENO);
        if (from_file) {
            // Its console and its log are files: neither grows past the cap.
            const rlimit cap{rlim_t(o.file_cap), rlim_t(o.file_cap)};
            setrlimit(RLIMIT_FSIZE, &cap);
        }
        dup2(out, STDOUT_FILENO);
        dup2(out, STDERR_FILENO);
        close(in);
        close(out);
        std::vector<char*> argv;
        for (const auto& a : l.args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        std::fprintf(stderr, "pvmmu-run: cannot execute %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    }
    close(input[0]);
    if (pid > 0) {
        setpgid(pid, pid);
        close(out);
    }
    // What is typed goes to the emulator's serial input; at a terminal the
    // guest's bytes then come through as they are (its prompt, its line
    // editing), as `xl console` shows them, not a line at a time.
    std::unique_ptr<ConsoleInput> typed;
    if (o.console_input && l.takes_input && !from_file && pid > 0) {
        std::string note;
        typed = std::make_unique<ConsoleInput>(STDIN_FILENO, input[1], note);
        if (!note.empty() && !o.quiet) std::fprintf(stderr, "pvmmu-run: %s\n", note.c_str());
    }
    const bool passthrough = typed && typed->raw() && !o.quiet && isatty(STDOUT_FILENO);
    const bool echo_lines = !o.quiet && !passthrough;
    bool escaped = false;   // Ctrl-] typed
    bool spoke = false;     // the child has written something

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.timeout_s);
    std::string line, last;
    int worst = 0;   // of every `Test result:` line
    bool timed_out = false, reaped = false;
    int signal_caught = 0;
    int wait_status = 0;   // the child's, once reaped
    int status = 0;        // its exit status, or the one its ending line stands for
    // The ending line seen (and the lines after it that it asks for).
    const Ending* ended = nullptr;
    std::string end_text;
    unsigned more = 0;
    bool escape = false;
    char buf[4096];
    for (bool done = false; !done;) {
        if ((signal_caught = interrupted())) break;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            timed_out = true;
            break;
        }
        ssize_t n;
        if (from_file) {
            // A file is always readable: at its end, the emulator either
            // still runs (wait for more) or has exited (one last read).
            n = read(in, buf, sizeof(buf));
            if (n == 0 && !reaped) {
                if (pid > 0 && waitpid(pid, &wait_status, WNOHANG) == pid) reaped = true;
                else std::this_thread::sleep_for(std::chrono::milliseconds(100));
                continue;
            }
        } else {
            pollfd p[3] = {{in, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLOUT, 0}};
            // Input is passed on from the machine's first byte: its UART is
            // set up then (setting a 16550's FIFOs up drops what it holds).
            // Ctrl-] is seen before that too.
            if (typed) {
                p[1].fd = typed->read_fd();
                if (spoke && typed->wants_write()) p[2].fd = input[1];
            }
            const int r = poll(p, 3, int(left.count() > 1000 ? 1000 : left.count()));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) continue;
            if (typed && (p[1].revents || p[2].revents) && !typed->pump(p[1].revents != 0, spoke)) {
                escaped = true;
                break;
            }
            if (!p[0].revents) continue;
            n = read(in, buf, sizeof(buf));
        }
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;   // EOF: the program (and its threads) are gone
        spoke = true;
        if (passthrough) {
            std::fflush(stdout);
            for (ssize_t w = 0, k; w < n; w += k)
                if ((k = write(STDOUT_FILENO, buf + w, size_t(n - w))) <= 0) break;
        }
        for (ssize_t i = 0; i < n && !done; ++i) {
            if (buf[i] == '\r') continue;   // the serial console's line ends
            // GRUB's terminal escapes (ESC [ ... letter) on a serial console.
            if (buf[i] == '\033') escape = true;
            if (escape) {
                escape = !std::isalpha(static_cast<unsigned char>(buf[i]));
                continue;
            }
            if (buf[i] != '\n' && line.size() < kMaxConsoleLine) {
                line += buf[i];
                continue;
            }
            if (buf[i] != '\n') --i;   // a full line: cut here, this byte starts the next
            if (echo_lines) std::printf("%s\n", printable(line).c_str());
            record(line);
            if (expect_status < 0 || is_result(line)) last = line;
            if (is_result(line) && code_of(line) > worst) worst = code_of(line);
            if (ended) {
                end_text += " " + line;
                done = --more == 0;
            } else {
                for (const Ending& e : l.endings) {
                    if (line.rfind(e.prefix, 0) != 0) continue;
                    ended = &e;
                    end_text = line;
                    more = e.more;
                    done = more == 0;
                    status = status_of(e, line);
                    break;
                }
            }
            line.clear();
        }
        std::fflush(stdout);
    }
    if (!line.empty()) {   // an unterminated last line still counts as the last line
        if (echo_lines) std::printf("%s\n", printable(line).c_str());
        record(line);
        last = line;
        if (line.rfind("Test result: ", 0) == 0 && code_of(line) > worst) worst = code_of(line);
    }
    if (l.session) {
        if (ended) l.session->settle();
        l.session->stop();   // a machine that ran on, or one that timed out, is destroyed
    } else if (timed_out || ended || signal_caught || escaped) {
        kill(-pid, SIGKILL);
    }
    typed.reset();   // the terminal as it was before the verdict is printed
    close(in);
    // A program that closed its output may still run: wait for it only until
    // the deadline, then kill its group and reap it.
    while (!reaped && pid > 0) {
        const pid_t r = waitpid(pid, &wait_status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR)) break;
        if (r == 0 && (std::chrono::steady_clock::now() >= deadline || interrupted())) {
            signal_caught = interrupted();
            timed_out = !signal_caught;
            kill(-pid, SIGKILL);
            while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    // A session's machine gives no exit status: only an ending line stands for one.
    const bool exited = ended || l.session || WIFEXITED(wait_status);
    if (!ended) status = l.session ? -1 : exited ? WEXITSTATUS(wait_status) : -1;
    if (signal_caught) {
        why = std::string("interrupted by SIG") + sigabbrev_np(signal_caught) + ": the run was ended";
        return kInterruptedBase + signal_caught;
    }
    if (escaped) {
        if (passthrough) std::printf("\n");   // the guest's last line may be open
        why = "ended at the terminal by Ctrl-]";
        return kInterruptedBase + SIGINT;
    }
    if (timed_out) {
        char secs[32];
        std::snprintf(secs, sizeof(secs), "%g", o.timeout_s);
        why = std::string("timed out after ") + secs + " s";
        if (from_file) show_tail(child_log);
        return kCrashed;
    }
    if ((!exited && WTERMSIG(wait_status) == SIGXFSZ) || (from_file && (at_cap(l.console_file, o) || at_cap(child_log, o)))) {
        why = "its console or log file reached the launcher's cap of " + std::to_string(o.file_cap >> 20) + " MiB";
        return kCrashed;
    }
    if (!exited) {
        why = std::string("killed by signal ") + strsignal(WTERMSIG(wait_status));
        return kCrashed;
    }
    if (!need_result && status == expect_status) return worst;
    if (l.session && !ended) {
        why = "the machine ended without pvmmu's last line (" + l.session->gone() + ")";
        return kCrashed;
    }
    if (ended && status != expect_status) {
        why = "the console says: " + end_text;
        return kCrashed;
    }
    const int code = code_of(last);
    if (code == kCrashed) {
        why = "no `Test result:` line at the end of the console";
        if (from_file && !ended) show_tail(child_log);
        return code;
    }
    // A sim program exits with its result's code; anything else happened after
    // the result line (a crash in teardown, a sanitizer's report at exit). On
    // the bare-metal platforms the domain must have powered off after its result.
    const int want = expect_status < 0 ? code : expect_status;
    if (status != want) {
        why = "exit status " + std::to_string(status) + " after `" + last + "`";
        return kCrashed;
    }
    // Several domains print a result each: the worst of them, not the last.
    return worst > code ? worst : code;
}

std::string printable(const std::string& s)
{
    std::string p;
    auto hex = [&p](unsigned char c) {
        char h[8];
        std::snprintf(h, sizeof(h), "\\x%02x", c);
        p += h;
    };
    for (size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        const auto next = i + 1 < s.size() ? static_cast<unsigned char>(s[i + 1]) : 0;
        if (c == '\n') {
            p += "\\n";
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {   // a tab moves the cursor only forward
            hex(c);
        } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) {
            // U+0080..U+009F in UTF-8: the C1 controls (CSI is U+009B).
            hex(c);
            hex(next);
            ++i;
        } else {
            p += char(c);
        }
    }
    return p;
}

std::string quoted(const std::string& s)
{
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

int run_tool(const std::string& command, std::string& out)
{
    out.clear();
    FILE* f = popen(command.c_str(), "r");
    if (!f) return -1;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), f)) out += buf;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    const int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

bool on_path(const std::string& program)
{
    std::string out;
    return run_tool("command -v " + quoted(program) + " >/dev/null 2>&1", out) == 0;
}

std::string make_scratch()
{
    const char* tmp = std::getenv("TMPDIR");
    std::string t = std::string(tmp && *tmp ? tmp : "/tmp") + "/pvmmu-run.XXXXXX";
    return mkdtemp(t.data()) ? t : std::string();
}

} // namespace pvmmu::run
