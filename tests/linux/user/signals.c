/* Signals: a handler runs for a signal sent to oneself, with its siginfo; a
 * blocked signal stays pending and arrives once unblocked; a handler on an
 * alternate stack; a child killed by SIGTERM is reported so; SIGCHLD arrives;
 * a handler's registers survive (the kernel's signal frame round trip). */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

static volatile sig_atomic_t g_usr1, g_usr2, g_chld, g_from_pid;
static volatile uintptr_t g_sp;

static void on_usr1(int sig, siginfo_t* si, void* ctx)
{
    (void)sig, (void)ctx;
    ++g_usr1;
    g_from_pid = si->si_pid;
}

static void on_usr2(int sig)
{
    (void)sig;
    int local = 0;
    g_sp = (uintptr_t)&local;
    ++g_usr2;
}

static void on_chld(int sig)
{
    (void)sig;
    ++g_chld;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGCHLD, on_chld);

    /* Registers live across the handler: a sum kept in a register. */
    volatile long base = 12345;
    long sum = base;
    kill(getpid(), SIGUSR1);
    sum += base;
    if (g_usr1 != 1 || g_from_pid != getpid())
        report("signals", 0, "SIGUSR1 to self: %d deliveries, si_pid %d (want 1, %d)", (int)g_usr1, (int)g_from_pid,
               (int)getpid());
    if (sum != 2 * 12345) report("signals", 0, "a register changed across the handler: %ld", sum);

    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &old);
    kill(getpid(), SIGUSR1);
    sigset_t pending;
    sigpending(&pending);
    if (g_usr1 != 1 || !sigismember(&pending, SIGUSR1))
        report("signals", 0, "a blocked SIGUSR1 was delivered or is not pending");
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (g_usr1 != 2) report("signals", 0, "the unblocked SIGUSR1 did not arrive (%d)", (int)g_usr1);

    /* An alternate signal stack. */
    static char alt[65536];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof(alt), .ss_flags = 0};
    if (sigaltstack(&ss, NULL)) report("signals", 0, "sigaltstack: %s", strerror(errno));
    struct sigaction sa2;
    memset(&sa2, 0, sizeof(sa2));
    sa2.sa_handler = on_usr2;
    sa2.sa_flags = SA_ONSTACK;
    sigemptyset(&sa2.sa_mask);
    sigaction(SIGUSR2, &sa2, NULL);
    raise(SIGUSR2);
    if (g_usr2 != 1 || g_sp < (uintptr_t)alt || g_sp >= (uintptr_t)alt + sizeof(alt))
        report("signals", 0, "SIGUSR2 on the alternate stack: %d deliveries, sp %#lx", (int)g_usr2,
               (unsigned long)g_sp);

    /* A child ended by SIGTERM from its parent. */
    const pid_t pid = fork();
    if (pid == 0) {
        for (;;) pause();
    }
    if (pid < 0) report("signals", 0, "fork: %s", strerror(errno));
    kill(pid, SIGTERM);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGTERM)
        report("signals", 0, "the child ended with status %#x, not by SIGTERM", st);
    if (g_chld < 1) report("signals", 0, "no SIGCHLD");
    report("signals", 1, "handler with siginfo, blocked then pending, alternate stack, SIGTERM to a child, SIGCHLD");
}
