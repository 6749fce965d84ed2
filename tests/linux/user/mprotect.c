/* mmap and mprotect: a write to a page made read-only is a SIGSEGV with
 * SEGV_ACCERR at that address, a read of it still works, the write works
 * again once it is writable; a page unmapped is SEGV_MAPERR; a file mapping
 * shared between two processes sees the other's writes. Each fault is caught
 * and left with siglongjmp. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

static sigjmp_buf g_jump;
static volatile void* g_addr;
static volatile int g_code;

static void on_segv(int sig, siginfo_t* si, void* ctx)
{
    (void)sig, (void)ctx;
    g_addr = si->si_addr;
    g_code = si->si_code;
    siglongjmp(g_jump, 1);
}

/* 1 if the write faulted, its address and code in g_addr/g_code. */
static int write_faults(volatile char* p, char v)
{
    g_addr = NULL;
    g_code = 0;
    if (sigsetjmp(g_jump, 1)) return 1;
    *p = v;
    return 0;
}

int main(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, NULL)) report("mprotect", 0, "sigaction: %s", strerror(errno));

    const long page = sysconf(_SC_PAGESIZE);
    char* m = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) report("mprotect", 0, "mmap: %s", strerror(errno));
    for (int i = 0; i < 4; ++i) m[i * page] = (char)(i + 1);
    if (mprotect(m + page, page, PROT_READ)) report("mprotect", 0, "mprotect read-only: %s", strerror(errno));
    if (write_faults(m, 9)) report("mprotect", 0, "a write to the writable page before it faulted");
    if (!write_faults(m + page + 8, 7)) report("mprotect", 0, "a write to the read-only page did not fault");
    if (g_addr != m + page + 8 || g_code != SEGV_ACCERR)
        report("mprotect", 0, "the fault said address %p code %d, not %p code %d (SEGV_ACCERR)", (void*)g_addr,
               g_code, (void*)(m + page + 8), SEGV_ACCERR);
    if (m[page] != 2) report("mprotect", 0, "the read-only page reads %d, not 2", m[page]);
    if (mprotect(m + page, page, PROT_READ | PROT_WRITE)) report("mprotect", 0, "mprotect back: %s", strerror(errno));
    if (write_faults(m + page + 8, 7) || m[page + 8] != 7)
        report("mprotect", 0, "a write to the page made writable again faulted or was lost");
    if (munmap(m + 2 * page, page)) report("mprotect", 0, "munmap: %s", strerror(errno));
    if (!write_faults(m + 2 * page, 1) || g_code != SEGV_MAPERR)
        report("mprotect", 0, "a write to the unmapped page: fault %d, code %d (want SEGV_MAPERR %d)",
               g_addr != NULL, g_code, SEGV_MAPERR);
    if (m[3 * page] != 4) report("mprotect", 0, "the page after the hole reads %d, not 4", m[3 * page]);

    /* A shared mapping: the child's write is the parent's to read. */
    volatile int* shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) report("mprotect", 0, "mmap shared: %s", strerror(errno));
    const pid_t pid = fork();
    if (pid == 0) {
        shared[10] = 0x5a5a;
        _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || shared[10] != 0x5a5a)
        report("mprotect", 0, "a MAP_SHARED page did not carry the child's write (status %#x)", st);
    report("mprotect", 1, "read-only write SIGSEGV/SEGV_ACCERR at its address, unmapped SEGV_MAPERR, shared page");
}
