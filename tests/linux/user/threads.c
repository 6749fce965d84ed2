/* Threads: kThreads pthreads of one process (one address space on several
 * vCPUs where there are several) increment a counter under a mutex and an
 * atomic one, and write their own slices of a shared array; the totals and
 * every slice are checked after the joins. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

enum { kThreads = 8, kRounds = 5000, kSlice = 4096 };

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static long g_locked;
static long g_atomic;
static unsigned char g_slices[kThreads][kSlice];

static void* worker(void* arg)
{
    const long me = (long)arg;
    for (int i = 0; i < kRounds; ++i) {
        pthread_mutex_lock(&g_lock);
        ++g_locked;
        pthread_mutex_unlock(&g_lock);
        __atomic_fetch_add(&g_atomic, 1, __ATOMIC_RELAXED);
        g_slices[me][i % kSlice] = (unsigned char)(me + 1);
        if (i % 500 == 0) sched_yield();
    }
    return (void*)(me * 3);
}

int main(void)
{
    pthread_t t[kThreads];
    for (long i = 0; i < kThreads; ++i) {
        const int rc = pthread_create(&t[i], NULL, worker, (void*)i);
        if (rc) report("threads", 0, "pthread_create %ld: %s", i, strerror(rc));
    }
    for (long i = 0; i < kThreads; ++i) {
        void* ret = NULL;
        const int rc = pthread_join(t[i], &ret);
        if (rc) report("threads", 0, "pthread_join %ld: %s", i, strerror(rc));
        if ((long)ret != i * 3) report("threads", 0, "thread %ld returned %ld", i, (long)ret);
    }
    const long want = (long)kThreads * kRounds;
    if (g_locked != want || g_atomic != want)
        report("threads", 0, "counters %ld (mutex) and %ld (atomic), not %ld", g_locked, g_atomic, want);
    for (int i = 0; i < kThreads; ++i)
        for (int j = 0; j < kSlice; ++j)
            if (g_slices[i][j] != i + 1) report("threads", 0, "thread %d's slice byte %d is %d", i, j, g_slices[i][j]);
    report("threads", 1, "%d threads, %ld increments each way", kThreads, want);
}
