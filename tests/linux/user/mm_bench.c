/* mm-bench: Linux's own page-table updates, measured from user space, for
 * `./pvmmu bench linux` (perf/bench_linux.py), which boots the same kernel
 * natively, as dom0 of Xen 4.17 and as a domain of pvmmu, each with this
 * program in its initramfs (tools/make-initramfs.sh, linux-bench=ARGS).
 *
 * Workloads, each run by TASKS tasks (threads or processes) side by side:
 *   threads    each thread of one process mprotects its own region
 *              RW -> RO -> RW and writes one byte to every page of it, ITERS
 *              times (will-it-scale's mprotect; seed 003's database pattern);
 *              every mprotect flushes the TLBs of the CPUs the process runs on
 *   processes  the same, each task a process of its own (no remote flushes)
 *   shared     the threads' loop on adjacent slices of one mapping: each
 *              mprotect splits the mapping and the next merges it again,
 *              under the one mmap lock
 *   fault      each task maps PAGES anonymous pages, writes every page
 *              (a demand-zero fault each) and unmaps them, ITERS times
 *   fork       each task, owning PAGES written pages, forks a child that
 *              exits at once, waits for it and writes every page again:
 *              fork write-protects every PTE of the parent, the child's
 *              exit drops its copies, the writes take the pages back
 *
 * One line per workload, read by the driver:
 *   mm-bench: workload=W tasks=T pages=P iters=I ops=O changed=C ns=N
 *             ops_per_s=… pages_per_s=… pgfault=… tlb_shootdowns=…
 *             tlb_remote_flush=…
 * ops: mprotect calls (threads, processes, shared), mmaps (fault) or forks;
 * changed: the PTEs those ops changed (every page once per mprotect, fault
 * or fork); ns: CLOCK_MONOTONIC across the measured loops of every task,
 * set-up and the first touch of each page left out, and so is the tasks'
 * teardown (a thread's unmap of its region, a process's exit), which waits
 * until the clock and the counts below are read. Under QEMU with
 * -icount the guest's clock advances by 2^shift ns per instruction of any
 * vCPU, hypervisor included (docs/results.md §13). The last three are the
 * deltas of /proc/vmstat's pgfault and nr_tlb_remote_flush and of
 * /proc/interrupts' TLB shootdowns line (-1 where the kernel has no such
 * count). With --pvmmu-counts a second line follows each,
 *   mm-bench: pvmmu workload=W hypercalls=… mmu_updates=… requests=… …
 * pvmmu's own counts over the same interval, summed over the vCPUs
 * (pvmmu_counts.h), or `unavailable=WHY` in their place where they cannot
 * be had (natively, on Xen); they count whatever the whole guest
 * asked for meanwhile, its idle vCPUs and the counts' own reads (one
 * pvmmu_op call per vCPU) included. Exit 0, or 1 with `mm-bench: FAIL ...`. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pvmmu_counts.h"

enum workload { W_THREADS, W_PROCESSES, W_SHARED, W_FAULT, W_FORK, W_COUNT };
static const char* const g_names[W_COUNT] = {"threads", "processes", "shared", "fault", "fork"};

static long g_page;
static unsigned g_tasks, g_pages, g_iters;
static pthread_barrier_t g_ready, g_start, g_end, g_exit;
static int g_pv;   /* --pvmmu-counts: 1 asked for, 2 and pv_open worked */

static void fail(const char* call, const char* what)
{
    printf("mm-bench: FAIL %s: %s (%s)\n", call, what, strerror(errno));
    fflush(stdout);
    exit(1);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void touch(char* p, unsigned pages, char v)
{
    for (unsigned i = 0; i < pages; ++i) p[(size_t)i * (size_t)g_page] = v;
}

static char* map_pages(unsigned pages)
{
    char* p = mmap(NULL, (size_t)pages * (size_t)g_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("mmap", "anonymous pages");
    /* Every page its own PTE on every platform: Xen PV has no huge pages,
     * and a transparent one would change 512 pages with one PMD natively
     * (Linux turns them off below 512 MiB of memory anyway). */
    madvise(p, (size_t)pages * (size_t)g_page, MADV_NOHUGEPAGE);
    return p;
}

/* The mprotect loop on one region: 2 mprotects, 2 × pages changed PTEs. */
static void mprotect_loop(char* p, unsigned pages)
{
    const size_t len = (size_t)pages * (size_t)g_page;
    for (unsigned i = 0; i < g_iters; ++i) {
        if (mprotect(p, len, PROT_READ)) fail("mprotect", "read-only");
        if (mprotect(p, len, PROT_READ | PROT_WRITE)) fail("mprotect", "read-write");
        touch(p, pages, (char)i);
    }
}

static void fault_loop(void)
{
    for (unsigned i = 0; i < g_iters; ++i) {
        char* p = map_pages(g_pages);
        touch(p, g_pages, 1);
        if (munmap(p, (size_t)g_pages * (size_t)g_page)) fail("munmap", "the faulted pages");
    }
}

static void fork_loop(char* p)
{
    for (unsigned i = 0; i < g_iters; ++i) {
        const pid_t pid = fork();
        if (pid < 0) fail("fork", "the large address space");
        if (pid == 0) _exit(0);
        int st = 0;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) fail("waitpid", "the forked child");
        touch(p, g_pages, (char)i);
    }
}

/* One task's work for workload W, its region set up and touched first (out
 * of the measured interval), then the loop between the two barriers or, in
 * a process, between the start byte and the done byte. */
static char* g_shared;

static void task_setup(enum workload w, unsigned index, char** region)
{
    if (w == W_SHARED) *region = g_shared + (size_t)index * g_pages * (size_t)g_page;
    else if (w != W_FAULT) {
        *region = map_pages(g_pages);
        touch(*region, g_pages, 1);
    }
}

static void task_run(enum workload w, char* region)
{
    switch (w) {
    case W_THREADS:
    case W_PROCESSES:
    case W_SHARED: mprotect_loop(region, g_pages); break;
    case W_FAULT: fault_loop(); break;
    case W_FORK: fork_loop(region); break;
    default: break;
    }
}

struct thread_arg {
    enum workload w;
    unsigned index;
};

static void* thread_main(void* v)
{
    const struct thread_arg* a = v;
    char* region = NULL;
    task_setup(a->w, a->index, &region);
    pthread_barrier_wait(&g_ready);
    pthread_barrier_wait(&g_start);
    task_run(a->w, region);
    pthread_barrier_wait(&g_end);
    pthread_barrier_wait(&g_exit);   /* the clock and the counts read first */
    if (region && a->w != W_SHARED) munmap(region, (size_t)g_pages * (size_t)g_page);
    return NULL;
}

/* /proc/vmstat's KEY, -1 when the kernel does not count it. */
static long long vmstat(const char* key)
{
    FILE* f = fopen("/proc/vmstat", "r");
    if (!f) return -1;
    char name[64];
    long long v, found = -1;
    while (fscanf(f, "%63s %lld", name, &v) == 2)
        if (!strcmp(name, key)) found = v;
    fclose(f);
    return found;
}

/* The sum over CPUs of /proc/interrupts' "TLB:" line (x86's TLB shootdown
 * IPIs; Xen PV guests flush by hypercall and count none), -1 without it. */
static long long tlb_shootdowns(void)
{
    FILE* f = fopen("/proc/interrupts", "r");
    if (!f) return -1;
    char line[4096];
    long long sum = -1;
    while (fgets(line, sizeof(line), f)) {
        char* s = line;
        while (*s == ' ') ++s;
        if (strncmp(s, "TLB:", 4)) continue;
        sum = 0;
        for (char* e = s + 4;;) {
            char* next;
            const long long n = strtoll(e, &next, 10);
            if (next == e) break;
            sum += n;
            e = next;
        }
    }
    fclose(f);
    return sum;
}

static long long delta(long long a, long long b) { return a < 0 || b < 0 ? -1 : b - a; }

static void run(enum workload w)
{
    pthread_t th[64];
    struct thread_arg args[64];
    pid_t pid[64];
    int go[2], done[2], leave[2];
    if (w == W_SHARED) {
        g_shared = map_pages(g_tasks * g_pages);
        touch(g_shared, g_tasks * g_pages, 1);
    }
    const int procs = w != W_THREADS && w != W_SHARED;
    if (procs) {
        if (pipe(go) || pipe(done) || pipe(leave)) fail("pipe", "start, done and exit");
        for (unsigned i = 0; i < g_tasks; ++i) {
            pid[i] = fork();
            if (pid[i] < 0) fail("fork", "a task");
            if (pid[i] == 0) {
                char* region = NULL;
                char b = 0;
                task_setup(w, i, &region);
                if (write(done[1], &b, 1) != 1 || read(go[0], &b, 1) != 1) _exit(2);
                task_run(w, region);
                /* The exit (the address space's teardown) once the clock
                 * and the counts are read. */
                if (write(done[1], &b, 1) != 1 || read(leave[0], &b, 1) != 1) _exit(2);
                _exit(0);
            }
        }
    } else {
        if (pthread_barrier_init(&g_ready, NULL, g_tasks + 1) || pthread_barrier_init(&g_start, NULL, g_tasks + 1) ||
            pthread_barrier_init(&g_end, NULL, g_tasks + 1) || pthread_barrier_init(&g_exit, NULL, g_tasks + 1))
            fail("pthread_barrier_init", "start and end");
        for (unsigned i = 0; i < g_tasks; ++i) {
            args[i] = (struct thread_arg){w, i};
            if (pthread_create(&th[i], NULL, thread_main, &args[i])) fail("pthread_create", "a task");
        }
    }
    char b[64];
    if (!procs) pthread_barrier_wait(&g_ready);   /* every task set up */
    if (procs)
        for (unsigned got = 0; got < g_tasks;) {
            const ssize_t n = read(done[0], b, g_tasks - got);
            if (n <= 0) fail("read", "the tasks' set-up bytes");
            got += (unsigned)n;
        }
    const long long fault0 = vmstat("pgfault"), flush0 = vmstat("nr_tlb_remote_flush"), tlb0 = tlb_shootdowns();
    struct pv_counts pv0, pv1;
    int pv_ok = g_pv == 2 && pv_read(&pv0) == 0;
    const uint64_t t0 = now_ns();
    if (procs) {
        memset(b, 0, sizeof(b));
        if (write(go[1], b, g_tasks) != (ssize_t)g_tasks) fail("write", "the start bytes");
        for (unsigned got = 0; got < g_tasks;) {
            const ssize_t n = read(done[0], b, g_tasks - got);
            if (n <= 0) fail("read", "the tasks' done bytes");
            got += (unsigned)n;
        }
    } else {
        pthread_barrier_wait(&g_start);
        pthread_barrier_wait(&g_end);
    }
    const uint64_t ns = now_ns() - t0;
    pv_ok = pv_ok && pv_read(&pv1) == 0;
    const long long fault1 = vmstat("pgfault"), flush1 = vmstat("nr_tlb_remote_flush"), tlb1 = tlb_shootdowns();
    if (procs) {
        if (write(leave[1], b, g_tasks) != (ssize_t)g_tasks) fail("write", "the exit bytes");
        for (unsigned i = 0; i < g_tasks; ++i) {
            int st = 0;
            if (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) || WEXITSTATUS(st))
                fail("waitpid", "a task failed");
        }
        close(go[0]), close(go[1]), close(done[0]), close(done[1]), close(leave[0]), close(leave[1]);
    } else {
        pthread_barrier_wait(&g_exit);
        for (unsigned i = 0; i < g_tasks; ++i) pthread_join(th[i], NULL);
        pthread_barrier_destroy(&g_ready);
        pthread_barrier_destroy(&g_start);
        pthread_barrier_destroy(&g_end);
        pthread_barrier_destroy(&g_exit);
    }
    if (w == W_SHARED) munmap(g_shared, (size_t)g_tasks * g_pages * (size_t)g_page);
    const unsigned long long per_task = w == W_FAULT || w == W_FORK ? g_iters : 2ull * g_iters;
    const unsigned long long ops = per_task * g_tasks, changed = ops * g_pages;
    const double s = (double)ns / 1e9;
    printf("mm-bench: workload=%s tasks=%u pages=%u iters=%u ops=%llu changed=%llu ns=%llu ops_per_s=%.0f "
           "pages_per_s=%.0f pgfault=%lld tlb_shootdowns=%lld tlb_remote_flush=%lld",
           g_names[w], g_tasks, g_pages, g_iters, ops, changed, (unsigned long long)ns, s > 0 ? ops / s : 0.0,
           s > 0 ? changed / s : 0.0, delta(fault0, fault1), delta(tlb0, tlb1), delta(flush0, flush1));
    printf("\n");
    if (g_pv) pv_print(g_names[w], pv_ok, &pv0, &pv1);
    fflush(stdout);
}

/* Brings every CPU that is present but offline online (the kernel booted
 * with maxcpus=1): prints how many are online afterwards. */
static void online_cpus(void)
{
    for (int cpu = 1; cpu < 64; ++cpu) {
        char path[64], state = 0;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/online", cpu);
        FILE* f = fopen(path, "r+");
        if (!f) continue;
        if (fread(&state, 1, 1, f) == 1 && state == '0') {
            rewind(f);
            if (fputs("1", f) < 0 || fflush(f)) printf("mm-bench: CPU %d stays offline (%s)\n", cpu, strerror(errno));
        }
        fclose(f);
    }
    printf("mm-bench: %ld CPUs online\n", sysconf(_SC_NPROCESSORS_ONLN));
    fflush(stdout);
}

static void usage(void)
{
    printf("usage: mm-bench [--online-cpus] [--pvmmu-counts] [--workloads LIST] [--tasks N] [--pages P] [--iters I]\n"
           "  LIST: threads,processes,shared,fault,fork (default all); N: tasks (default the CPUs);\n"
           "  P: pages per task (default 1024); I: iterations per task (default 8);\n"
           "  --online-cpus first brings the CPUs a maxcpus=1 boot left offline online;\n"
           "  --pvmmu-counts adds pvmmu's counts of each workload (pvmmu_counts.h)\n");
}

int main(int argc, char** argv)
{
    g_page = sysconf(_SC_PAGESIZE);
    g_tasks = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
    g_pages = 1024, g_iters = 8;
    char list[256] = "threads,processes,shared,fault,fork";
    for (int i = 1; i < argc; ++i) {
        const char* a = argv[i];
        if (!strcmp(a, "--online-cpus")) {
            online_cpus();
            g_tasks = (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
            continue;
        }
        if (!strcmp(a, "--pvmmu-counts")) {
            g_pv = 1;
            continue;
        }
        const char* v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (!v) {
            usage();
            return 2;
        }
        if (!strcmp(a, "--workloads")) snprintf(list, sizeof(list), "%s", v);
        else if (!strcmp(a, "--tasks")) g_tasks = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--pages")) g_pages = (unsigned)strtoul(v, NULL, 10);
        else if (!strcmp(a, "--iters")) g_iters = (unsigned)strtoul(v, NULL, 10);
        else {
            usage();
            return 2;
        }
        ++i;
    }
    if (g_tasks < 1 || g_tasks > 64 || g_pages < 1 || g_iters < 1) {
        printf("mm-bench: FAIL tasks 1..64, pages and iters at least 1\n");
        return 1;
    }
    printf("mm-bench: %u CPUs, page %ld bytes, %u tasks x %u pages x %u iterations\n",
           (unsigned)sysconf(_SC_NPROCESSORS_ONLN), g_page, g_tasks, g_pages, g_iters);
    if (g_pv && pv_open() == 0) g_pv = 2;
    else if (g_pv) printf("mm-bench: pvmmu's counts unavailable (%s)\n", g_pv_why);
    for (char* save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int w = 0;
        while (w < W_COUNT && strcmp(t, g_names[w])) ++w;
        if (w == W_COUNT) {
            printf("mm-bench: FAIL unknown workload '%s'\n", t);
            return 1;
        }
        run((enum workload)w);
    }
    printf("mm-bench: done\n");
    return 0;
}
