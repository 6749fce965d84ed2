// The launcher's judgement of a run (tools/run_child.cc), with /bin/sh
// playing the emulator: the exit codes of docs/design.md §6 from an exit status, from
// a console line that stands for one (Xen halts instead of exiting, Bochs
// ignores isa-debug-exit), from a console in a file, and on a timeout.
#include "run_backend.h"

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <pty.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace pvmmu::run {
namespace {

struct RunChild : ::testing::Test {
    Options o;
    Launch l;
    std::string why;
    std::vector<std::string> console;

    RunChild() { o.quiet = true, o.timeout_s = 20; }
    void shell(const std::string& script) { l.args = {"/bin/sh", "-c", script}; }
    int run(int expect_status = kPoweroffStatus, bool need_result = true)
    {
        return run_child(l, o, expect_status, need_result, why, &console);
    }
};

const Ending kHalted{"(XEN) Hardware Dom0 halted", kPoweroffStatus, 0};
const Ending kDom0Crashed{"(XEN) Hardware Dom0 crashed", kCrashStatus, 0};
const Ending kXenPanic{"(XEN) Panic on CPU", kPanicStatus, 1};
const Ending kPvmmuEnd{"pvmmu: no domain left running; ending", -1, 0};

TEST_F(RunChild, ASimProgramExitsWithItsResultsCode)
{
    shell("echo 'Test result: SKIP'; exit 3");
    EXPECT_EQ(run(-1), 3);
    shell("echo 'Test result: SUCCESS'; exit 5");
    EXPECT_EQ(run(-1), kCrashed);
    EXPECT_NE(why.find("exit status 5"), std::string::npos) << why;
}

TEST_F(RunChild, QemusStatusMustBePoweroffAfterTheResult)
{
    shell("echo 'Test result: FAILURE'; echo 'pvmmu: done'; exit 65");
    EXPECT_EQ(run(), 5);
    shell("echo 'Test result: SUCCESS'; exit 71");
    EXPECT_EQ(run(), kCrashed);
    shell("echo hello; exit 65");
    EXPECT_EQ(run(), kCrashed);
    EXPECT_NE(why.find("no `Test result:` line"), std::string::npos) << why;
}

// Two domains, one failed: the run is the failure even when the other's
// SUCCESS comes last.
TEST_F(RunChild, TheWorstResultOfSeveralDomainsCounts)
{
    shell("echo 'Test result: FAILURE'; echo 'Test result: SUCCESS'; exit 65");
    EXPECT_EQ(run(), 5) << why;
    shell("echo 'Test result: SUCCESS'; echo 'Test result: SKIP'; exit 65");
    EXPECT_EQ(run(), 3) << why;
}

TEST_F(RunChild, AnEndingLineStopsAnEmulatorThatRunsOn)
{
    shell("echo 'Test result: SUCCESS'; echo '(XEN) Hardware Dom0 halted: halting machine'; exec sleep 60");
    l.endings = {kHalted, kDom0Crashed};
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(run(), 0) << why;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_F(RunChild, ACrashLineIsSixWithTheLineAsTheReason)
{
    shell("echo 'Test result: SUCCESS'; echo \"(XEN) Hardware Dom0 crashed: 'noreboot' set\"; exec sleep 60");
    l.endings = {kHalted, kDom0Crashed};
    EXPECT_EQ(run(), kCrashed);
    EXPECT_EQ(why, "the console says: (XEN) Hardware Dom0 crashed: 'noreboot' set");
}

TEST_F(RunChild, APanicEndsAfterItsMessage)
{
    shell("echo '(XEN) Panic on CPU 0:'; echo '(XEN) Xen BUG at mm.c:42'; echo '(XEN) later'; exec sleep 60");
    l.endings = {kXenPanic};
    EXPECT_EQ(run(), kCrashed);
    EXPECT_EQ(why, "the console says: (XEN) Panic on CPU 0: (XEN) Xen BUG at mm.c:42");
    EXPECT_EQ(console.back(), "(XEN) Xen BUG at mm.c:42");
}

TEST_F(RunChild, WithoutAResultAPoweroffPassesOnlyWhenNoneIsNeeded)
{
    shell("echo 'smoke guest: all checks passed'; echo '(XEN) Hardware Dom0 halted'; exec sleep 60");
    l.endings = {kHalted};
    EXPECT_EQ(run(kPoweroffStatus, true), kCrashed);
    EXPECT_EQ(run(kPoweroffStatus, false), 0);
}

TEST_F(RunChild, TheEndingLineMayNameTheExitCode)
{
    l.endings = {kPvmmuEnd};
    shell("echo 'Test result: SUCCESS'; echo 'pvmmu: no domain left running; ending (isa-debug-exit code 0x20)'; "
          "exec sleep 60");
    EXPECT_EQ(run(), 0) << why;
    shell("echo 'Test result: SUCCESS'; echo 'pvmmu: no domain left running; ending (isa-debug-exit code 0x23)'; "
          "exec sleep 60");
    EXPECT_EQ(run(), kCrashed);
}

TEST_F(RunChild, AConsoleInAFileIsFollowed)
{
    l.scratch = make_scratch();
    ASSERT_FALSE(l.scratch.empty());
    l.console_file = l.scratch + "/com1";
    l.endings = {kPvmmuEnd};
    // Bochs's way: its own chatter on stdout, the guest's console in the file,
    // written a line at a time, GRUB's terminal escapes included.
    shell("echo 'bochs: starting'; sleep 0.3; printf '\\033[H\\033[Jhello\\r\\n' >" + l.console_file +
          "; sleep 0.3; echo 'Test result: SUCCESS' >>" + l.console_file +
          "; echo 'pvmmu: no domain left running; ending (isa-debug-exit code 0x20)' >>" + l.console_file +
          "; exec sleep 60");
    EXPECT_EQ(run(), 0) << why;
    ASSERT_EQ(console.size(), 3u);
    EXPECT_EQ(console[0], "hello");
}

TEST_F(RunChild, ARunThatOutlivesItsTimeoutIsKilledAndSix)
{
    o.timeout_s = 0.5;
    shell("echo 'Test result: SUCCESS'; exec sleep 60");
    l.endings = {kHalted};
    EXPECT_EQ(run(), kCrashed);
    EXPECT_EQ(why, "timed out after 0.5 s");
}

// A program that closes its output and runs on is waited for only until the
// deadline (before, the launcher waited for it for ever after the EOF).
TEST_F(RunChild, AProgramThatClosesItsOutputAndRunsOnTimesOut)
{
    o.timeout_s = 0.5;
    shell("echo 'Test result: SUCCESS'; exec sleep 60 >/dev/null 2>&1");
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(run(), kCrashed);
    EXPECT_EQ(why, "timed out after 0.5 s");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST_F(RunChild, TheScratchFolderGoesWithTheLaunch)
{
    std::string dir;
    {
        Launch scratch;
        scratch.scratch = dir = make_scratch();
        ASSERT_TRUE(std::filesystem::is_directory(dir));
    }
    EXPECT_FALSE(std::filesystem::exists(dir));
}

// Run in a child process of the test, with `body`'s return as its exit status:
// for what changes the process (its terminal, a caught signal).
template <typename F>
int in_child(F body, bool with_pty)
{
    int master = -1;
    const pid_t pid = with_pty ? forkpty(&master, nullptr, nullptr, nullptr) : fork();
    if (pid == 0) _exit(body());
    if (pid < 0) return -1;
    if (master >= 0) {
        char buf[256];
        while (read(master, buf, sizeof(buf)) > 0) {   // EIO once the child is gone
        }
        close(master);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// At a terminal (forkpty: the launcher in its session's foreground group),
// the emulator's input must not be that terminal: as a background process
// group, reading it or setting its modes (QEMU's -serial stdio does both)
// would stop it with SIGTTIN/SIGTTOU until the timeout.
TEST_F(RunChild, TheChildsInputIsNeverTheLaunchersTerminal)
{
    const int code = in_child([this] {
        shell("if [ -t 0 ]; then echo 'Test result: FAILURE'; else echo 'Test result: SUCCESS'; fi; exit 65");
        return run();
    }, true);
    EXPECT_EQ(code, 0);
}

// A child that never writes a newline cannot grow the launcher's memory.
TEST_F(RunChild, ALineWithoutANewlineIsCutAtTheCap)
{
    shell("head -c 100000 /dev/zero | tr '\\0' x; echo; echo 'Test result: SUCCESS'; exit 65");
    EXPECT_EQ(run(), 0) << why;
    ASSERT_GE(console.size(), 100000 / kMaxConsoleLine);
    size_t total = 0;
    for (const std::string& c : console) {
        EXPECT_LE(c.size(), kMaxConsoleLine);
        if (c != "Test result: SUCCESS") total += c.size();
    }
    EXPECT_EQ(total, 100000u);
}

// Bochs's way, a console in a file: the file (and the emulator's log) stop at
// the cap, and the run says so.
TEST_F(RunChild, AConsoleFileStopsAtTheCap)
{
    l.scratch = make_scratch();
    ASSERT_FALSE(l.scratch.empty());
    l.console_file = l.scratch + "/com1";
    o.file_cap = 1 << 20;
    shell("exec yes 'no newline ever' | tr -d '\\n' >" + l.console_file);
    EXPECT_EQ(run(), kCrashed);
    EXPECT_NE(why.find("cap of 1 MiB"), std::string::npos) << why;
    struct stat st = {};
    ASSERT_EQ(stat(l.console_file.c_str(), &st), 0);
    EXPECT_LE(st.st_size, 1 << 20);
}

// SIGTERM (or Ctrl-C's SIGINT) ends the run: the child's group is killed, the
// launch's scratch folder (Bochs's ISO and console) goes, and the run says
// 128 + the signal.
TEST_F(RunChild, ASignalEndsTheRunAndRemovesItsFiles)
{
    const std::string dir = make_scratch();
    ASSERT_FALSE(dir.empty());
    const std::string pidfile = dir + ".pid";
    const int code = in_child([&] {
        catch_interrupts();
        int rc;
        {
            Launch run;
            run.scratch = dir;
            run.args = {"/bin/sh", "-c", "echo $$ >" + pidfile + "; exec sleep 60"};
            std::thread([] {
                std::this_thread::sleep_for(std::chrono::milliseconds(500));
                kill(getpid(), SIGTERM);
            }).detach();
            rc = run_child(run, o, kPoweroffStatus, true, why);
        }
        return rc;
    }, false);
    EXPECT_EQ(code, kInterruptedBase + SIGTERM);
    EXPECT_FALSE(std::filesystem::exists(dir));
    // The child (its group) is gone too.
    FILE* f = std::fopen(pidfile.c_str(), "r");
    ASSERT_NE(f, nullptr);
    int child = 0;
    ASSERT_EQ(std::fscanf(f, "%d", &child), 1);
    std::fclose(f);
    std::remove(pidfile.c_str());
    EXPECT_NE(kill(child, 0), 0);
}

TEST(Printable, ControlCharactersAreEscaped)
{
    EXPECT_EQ(printable("a\033]0;title\007b"), "a\\x1b]0;title\\x07b");
    EXPECT_EQ(printable("line\nnext\tend\x7f\r"), "line\\nnext\tend\\x7f\\x0d");
    EXPECT_EQ(printable("csi \xc2\x9b" "31m"), "csi \\xc2\\x9b31m");
    EXPECT_EQ(printable("caf\xc3\xa9 \xc5\x9b"), "caf\xc3\xa9 \xc5\x9b");   // letters stay
}

} // namespace
} // namespace pvmmu::run
