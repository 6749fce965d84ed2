/* A fork/exec storm: kChildren processes, each forked and exec'ing this
 * program again with one argument, whose exit status carries a number only
 * that child knows. Every page table the kernel builds and tears down for
 * them goes through the hypervisor on a PV kernel; the sum says every child
 * ran its own image to the end. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

enum { kChildren = 64, kAtOnce = 8 };

int main(int argc, char** argv)
{
    if (argc == 2) return atoi(argv[1]) % 199 + 1;   /* the child, exec'd */
    long want = 0, got = 0;
    int running = 0, started = 0, done = 0;
    while (done < kChildren) {
        while (started < kChildren && running < kAtOnce) {
            const pid_t pid = fork();
            if (pid < 0) report("fork-exec", 0, "fork %d: %s", started, strerror(errno));
            if (pid == 0) {
                char n[16];
                snprintf(n, sizeof(n), "%d", started);
                execl("/proc/self/exe", argv[0], n, (char*)0);
                _exit(255);   /* exec failed */
            }
            want += started % 199 + 1;
            ++started;
            ++running;
        }
        int st = 0;
        if (wait(&st) < 0) report("fork-exec", 0, "wait: %s", strerror(errno));
        if (!WIFEXITED(st) || WEXITSTATUS(st) == 255)
            report("fork-exec", 0, "a child ended with status %#x (exec failed or killed)", st);
        got += WEXITSTATUS(st);
        --running;
        ++done;
    }
    if (got != want) report("fork-exec", 0, "exit statuses sum to %ld, not %ld", got, want);
    report("fork-exec", 1, "%d children forked, exec'd and reaped", kChildren);
}
