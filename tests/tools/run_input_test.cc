// pvmmu-run --console (tools/run_input.cc, through run_child): piped input
// reaches the child's stdin; at a terminal the terminal is raw while the run
// lasts and as it was afterwards, on the run's end, on Ctrl-] (exit 130) and
// on a signal; /bin/sh plays the emulator.
#include "run_backend.h"
#include "run_input.h"

#include <csignal>
#include <cstring>
#include <string>

#include <pty.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace pvmmu::run {
namespace {

Options console_options()
{
    Options o;
    o.quiet = true;
    o.timeout_s = 20;
    o.console_input = true;
    return o;
}

int run_shell(const std::string& script, const Options& o, std::string& why)
{
    Launch l;
    l.args = {"/bin/sh", "-c", script};
    l.takes_input = true;
    return run_child(l, o, kPoweroffStatus, true, why);
}

// The terminal's modes (not the struct's padding, which tcgetattr leaves).
bool same_modes(const struct termios& a, const struct termios& b)
{
    return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag &&
           std::memcmp(a.c_cc, b.c_cc, sizeof(a.c_cc)) == 0;
}

// The launcher's stdin a pipe holding `text`, in a child process (the test's
// own stdin is left alone): the run's code.
int with_piped_stdin(const std::string& text, const std::string& script, const Options& o)
{
    const pid_t pid = fork();
    if (pid == 0) {
        int p[2];
        if (pipe(p) != 0) _exit(100);
        if (write(p[1], text.data(), text.size()) != ssize_t(text.size())) _exit(101);
        close(p[1]);
        dup2(p[0], STDIN_FILENO);
        close(p[0]);
        std::string why;
        _exit(run_shell(script, o, why));
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(ConsoleInput, PipedInputReachesTheChild)
{
    // Input is forwarded once the child has written something (its UART is set up).
    const std::string echo = "echo up; read l; echo \"Test result: $l\"; exit 65";
    EXPECT_EQ(with_piped_stdin("SUCCESS\n", echo, console_options()), 0);
    // Without --console the child reads nothing: no result.
    Options plain = console_options();
    plain.console_input = false;
    plain.timeout_s = 2;   // the child waits for a line that never comes
    EXPECT_EQ(with_piped_stdin("SUCCESS\n", echo, plain), kCrashed);
}

// A launcher at a terminal (forkpty: its stdin, and its session's
// foreground job). `typed` is written to the terminal after `after_ms`.
// Returns the launcher's code; `modes_kept` whether the terminal's modes
// after the run are those before it.
struct AtTerminal {
    int code = -1;
    bool modes_kept = false;
    std::string output;
};

AtTerminal at_terminal(const std::string& script, const std::string& typed = "", int after_ms = 0,
                       int signal_after = 0)
{
    AtTerminal r;
    int master = -1;
    int report[2];
    if (pipe(report) != 0) return r;
    const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
        close(report[0]);
        struct termios before, after;
        tcgetattr(STDIN_FILENO, &before);
        std::string why;
        Options o = console_options();
        const int code = run_shell(script, o, why);
        tcgetattr(STDIN_FILENO, &after);
        const char kept = same_modes(before, after) ? 'y' : 'n';
        (void)!write(report[1], &kept, 1);
        _exit(code);
    }
    close(report[1]);
    if (pid < 0) return r;
    if (after_ms) {
        usleep(useconds_t(after_ms) * 1000);
        if (!typed.empty()) (void)!write(master, typed.data(), typed.size());
        if (signal_after) kill(pid, signal_after);
    }
    char buf[256];
    for (ssize_t n; (n = read(master, buf, sizeof(buf))) > 0;) r.output.append(buf, size_t(n));   // EIO at the end
    close(master);
    int st = 0;
    waitpid(pid, &st, 0);
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    char kept = 0;
    r.modes_kept = read(report[0], &kept, 1) == 1 && kept == 'y';
    close(report[0]);
    return r;
}

// The child sees the terminal raw (no canonical mode, no echo, no signal
// keys) through /dev/tty while the run lasts; afterwards it is as before.
TEST(ConsoleInput, ATerminalIsRawDuringTheRunAndRestoredAfter)
{
    const AtTerminal r = at_terminal(
        "m=$(stty -a </dev/tty); case \"$m\" in *-icanon*-isig*|*-isig*-icanon*) ;; *) exit 1;; esac;"
        "case \"$m\" in *-echo\\ *) echo 'Test result: SUCCESS';; *) echo 'Test result: FAILURE';; esac; exit 65");
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(r.modes_kept);
}

TEST(ConsoleInput, TypedBytesReachTheChildRaw)
{
    // A Ctrl-C typed is a byte for the guest, not a signal for the launcher.
    const AtTerminal r = at_terminal("echo up; c=$(head -c 2 | od -An -tx1 | tr -d ' '); "
                                     "[ \"$c\" = 0361 ] && echo 'Test result: SUCCESS'; exit 65",
                                     "\x03" "a", 300);
    EXPECT_EQ(r.code, 0) << r.output;
    EXPECT_TRUE(r.modes_kept);
}

TEST(ConsoleInput, CtrlRightBracketEndsTheRun)
{
    const AtTerminal r = at_terminal("exec sleep 30", std::string(1, kConsoleEscape), 300);
    EXPECT_EQ(r.code, kInterruptedBase + SIGINT) << r.output;
    EXPECT_TRUE(r.modes_kept);
}

// A signal nobody catches (here: SIGQUIT; SIGINT, SIGTERM and SIGHUP are
// pvmmu-run's verdicts, catch_interrupts) still ends the launcher as it
// would, with the terminal restored first.
TEST(ConsoleInput, AFatalSignalRestoresTheTerminalFirst)
{
    int master = -1;
    const pid_t pid = forkpty(&master, nullptr, nullptr, nullptr);
    if (pid == 0) {
        struct termios before;
        tcgetattr(STDIN_FILENO, &before);
        const pid_t launcher = fork();
        if (launcher == 0) {
            std::string why;
            _exit(run_shell("exec sleep 30", console_options(), why));
        }
        usleep(500 * 1000);
        kill(launcher, SIGQUIT);
        int st = 0;
        waitpid(launcher, &st, 0);
        struct termios after;
        tcgetattr(STDIN_FILENO, &after);
        const bool died = WIFSIGNALED(st) && WTERMSIG(st) == SIGQUIT;
        _exit(!died ? 2 : same_modes(before, after) ? 0 : 1);
    }
    ASSERT_GT(pid, 0);
    char buf[256];
    while (read(master, buf, sizeof(buf)) > 0) {
    }
    close(master);
    int st = 0;
    waitpid(pid, &st, 0);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_EQ(WEXITSTATUS(st), 0);   // 2: not ended by SIGQUIT, 1: the terminal left changed
}

} // namespace
} // namespace pvmmu::run
