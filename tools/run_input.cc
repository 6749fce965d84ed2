// The launcher's console input (run_input.h). Raw mode is undone on every
// way out the launcher has: this object's end (the run's end, Ctrl-],
// SIGINT/SIGTERM/SIGHUP, which run_child turns into a verdict), exit(), and
// the signals that would end the launcher at once (their handler restores
// the terminal, then lets the signal do what it does by default). Only
// SIGKILL and SIGSTOP leave it raw (`stty sane` or `reset` mends it).
#include "run_input.h"

#include <cerrno>
#include <csignal>
#include <cstdlib>

#include <fcntl.h>
#include <pthread.h>
#include <termios.h>
#include <unistd.h>

namespace pvmmu::run {

namespace {

// The terminal's modes before raw mode, for the handlers: one terminal at a
// time (one run at a time).
volatile sig_atomic_t g_raw_fd = -1;
struct termios g_saved;

constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGABRT, SIGSEGV,
                                 SIGBUS, SIGFPE, SIGILL, SIGALRM, SIGUSR1, SIGUSR2, SIGTSTP};
struct sigaction g_old[sizeof(kFatalSignals) / sizeof(kFatalSignals[0])];

void restore_terminal()
{
    const int fd = g_raw_fd;
    if (fd < 0) return;
    g_raw_fd = -1;
    tcsetattr(fd, TCSAFLUSH, &g_saved);
}

void restore_and_reraise(int sig)
{
    restore_terminal();   // async-signal-safe: tcsetattr
    signal(sig, SIG_DFL);
    raise(sig);
}

// The signals whose default would end (or stop) the launcher: caught only
// where nobody else catches them (run_child's catch_interrupts turns
// SIGINT, SIGTERM and SIGHUP into a verdict, and the object's end restores).
void catch_fatal_signals()
{
    for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(kFatalSignals[0]); ++i) {
        sigaction(kFatalSignals[i], nullptr, &g_old[i]);
        if (g_old[i].sa_handler != SIG_DFL || (g_old[i].sa_flags & SA_SIGINFO)) continue;
        struct sigaction sa = {};
        sa.sa_handler = restore_and_reraise;
        sigemptyset(&sa.sa_mask);
        sigaction(kFatalSignals[i], &sa, nullptr);
    }
}

void release_fatal_signals()
{
    for (size_t i = 0; i < sizeof(kFatalSignals) / sizeof(kFatalSignals[0]); ++i) {
        struct sigaction now;
        sigaction(kFatalSignals[i], nullptr, &now);
        if (now.sa_handler == restore_and_reraise) sigaction(kFatalSignals[i], &g_old[i], nullptr);
    }
}

} // namespace

ConsoleInput::ConsoleInput(int from, int to, std::string& note) : from_(from), to_(to)
{
    if (fcntl(to_, F_SETFL, fcntl(to_, F_GETFL) | O_NONBLOCK) != 0) {
        note = "--console: the emulator's input cannot be made non-blocking; no input";
        return;
    }
    if (isatty(from_)) {
        // A background job reading its terminal is stopped (SIGTTIN).
        if (tcgetpgrp(from_) != getpgrp()) {
            note = "--console: not the terminal's foreground job; the guest gets no input";
            return;
        }
        struct termios t;
        if (tcgetattr(from_, &t) != 0) {
            note = "--console: the terminal's modes cannot be read; no input";
            return;
        }
        g_saved = t;
        static bool registered = false;
        if (!registered) registered = std::atexit(restore_terminal) == 0;
        catch_fatal_signals();
        g_raw_fd = from_;
        // Raw input, byte by byte; output processing kept (the launcher's own
        // lines end in '\n' alone).
        t.c_iflag &= ~tcflag_t(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
        t.c_lflag &= ~tcflag_t(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
        t.c_cflag = (t.c_cflag & ~tcflag_t(CSIZE | PARENB)) | CS8;
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        if (tcsetattr(from_, TCSAFLUSH, &t) != 0) {
            restore_terminal();
            release_fatal_signals();
            note = "--console: the terminal cannot be put in raw mode; no input";
            return;
        }
        raw_ = true;
        note = "--console: the terminal is the console domain's input; Ctrl-] ends the run";
    }
    active_ = true;
}

ConsoleInput::~ConsoleInput()
{
    if (!raw_) return;
    restore_terminal();
    release_fatal_signals();
}

int ConsoleInput::read_fd() const
{
    constexpr size_t kMaxPending = 64 * 1024;
    return active_ && !eof_ && pending_.size() < kMaxPending ? from_ : -1;
}

bool ConsoleInput::pump(bool readable, bool may_write)
{
    if (!active_) return true;
    if (readable && read_fd() >= 0) {
        char buf[4096];
        const ssize_t n = read(from_, buf, sizeof(buf));
        if (n > 0) {
            for (ssize_t i = 0; i < n; ++i) {
                if (raw_ && buf[i] == kConsoleEscape) return false;
                pending_ += buf[i];
            }
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            eof_ = true;   // piped input ended: the guest reads what came
        }
    }
    if (!may_write) return true;
    // An emulator that is gone makes the write fail with EPIPE: its SIGPIPE
    // is held and taken here, never the launcher's end.
    sigset_t pipe_signal, old;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
    while (!pending_.empty()) {
        const ssize_t w = write(to_, pending_.data(), pending_.size());
        if (w > 0) {
            pending_.erase(0, size_t(w));
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EPIPE) {
            const struct timespec now = {};
            sigtimedwait(&pipe_signal, nullptr, &now);
            pending_.clear();
            active_ = false;
        }
        break;   // full (EAGAIN): the emulator takes more later
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return true;
}

} // namespace pvmmu::run
