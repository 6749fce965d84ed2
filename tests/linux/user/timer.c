/* Time: a 1 s nanosleep takes at least 1 s of CLOCK_MONOTONIC (POSIX: never
 * less), and not the many seconds a lost timer event would add; an interval
 * timer delivers its SIGALRMs; CLOCK_REALTIME moves with CLOCK_MONOTONIC.
 * All measured with the guest's own clock. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

static volatile sig_atomic_t g_ticks;

static void on_alarm(int sig)
{
    (void)sig;
    ++g_ticks;
}

static double now(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void)
{
    const double m0 = now(CLOCK_MONOTONIC), r0 = now(CLOCK_REALTIME);
    struct timespec one = {1, 0};
    while (nanosleep(&one, &one) && errno == EINTR) {
    }
    const double slept = now(CLOCK_MONOTONIC) - m0, real = now(CLOCK_REALTIME) - r0;
    if (slept < 1.0) report("timer", 0, "nanosleep(1 s) returned after %.3f s of CLOCK_MONOTONIC", slept);
    if (slept > 5.0) report("timer", 0, "nanosleep(1 s) took %.3f s of CLOCK_MONOTONIC (a lost timer?)", slept);
    if (real < slept - 0.1 || real > slept + 0.1)
        report("timer", 0, "CLOCK_REALTIME moved %.3f s while CLOCK_MONOTONIC moved %.3f s", real, slept);

    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 50000}, {0, 50000}};   /* every 50 ms */
    if (setitimer(ITIMER_REAL, &it, NULL)) report("timer", 0, "setitimer: %s", strerror(errno));
    const double t0 = now(CLOCK_MONOTONIC);
    while (g_ticks < 5 && now(CLOCK_MONOTONIC) - t0 < 5.0) pause();
    const double ticked = now(CLOCK_MONOTONIC) - t0;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    if (g_ticks < 5) report("timer", 0, "%d of 5 SIGALRMs from a 50 ms interval timer in %.3f s", (int)g_ticks, ticked);
    if (ticked < 0.2) report("timer", 0, "5 ticks of a 50 ms timer in %.3f s", ticked);
    report("timer", 1, "nanosleep(1 s) took %.3f s (monotonic), %.3f s (realtime); 5 ticks of 50 ms in %.3f s",
           slept, real, ticked);
}
