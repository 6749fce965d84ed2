/* pvmmu's own counts of what Linux asked of it (docs/abi.md §10 "pvmmu_op"),
 * read from user space through Linux's privcmd driver (xen-privcmd.ko,
 * IOCTL_PRIVCMD_HYPERCALL of <xen/sys/privcmd.h>), which lets root issue any
 * hypercall: PVMMUOP_vcpu_calls and PVMMUOP_vcpu_counters of every vCPU, and
 * PVMMUOP_install_retries. The hypervisor writes the results through the
 * page tables of the calling kernel, whose L4 maps user space in a Linux PV
 * guest, so a user pointer is one it can write.
 *
 * Where there is no /dev/xen/privcmd (natively, or the module not loaded) or
 * no pvmmu_op (Xen: -ENOSYS), the counts are unavailable, and say why. */
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <pvmmu/abi.h>   /* first: <xen/sys/privcmd.h> needs <xen/xen.h>'s types */
#include <xen/sys/privcmd.h>

struct pv_counts {
    unsigned long long hypercalls, continuations, multicalls, multicall_entries, mmu_updates, requests, pt_writes;
    unsigned long long faults, flush_all, flush_page, shootdowns_sent, shootdowns_served;
    long long install_retries;   /* machine-wide; -1 when refused (another domain ran) */
};

static int g_privcmd = -1;
static char g_pv_why[64] = "not asked for";

static long pv_op(unsigned long long cmd, unsigned long long a1, unsigned long long a2)
{
    privcmd_hypercall_t h = {__HYPERVISOR_pvmmu_op, {cmd, a1, a2, 0, 0}};
    const long rc = ioctl(g_privcmd, IOCTL_PRIVCMD_HYPERCALL, &h);
    return rc < 0 ? -errno : rc;
}

/* The sums over every vCPU (numbered until one is refused), 0 when read. */
static int pv_read(struct pv_counts* c)
{
    memset(c, 0, sizeof(*c));
    unsigned v = 0;
    for (;; ++v) {
        struct pvmmu_vcpu_calls k;
        struct pvmmu_vcpu_counters n;
        const long rc = pv_op(PVMMUOP_vcpu_calls, v, (unsigned long long)(uintptr_t)&k);
        if (rc == -EINVAL && v > 0) break;
        if (rc) {
            snprintf(g_pv_why, sizeof(g_pv_why), "pvmmu_op:%s", rc == -ENOSYS ? "ENOSYS" : strerror((int)-rc));
            return -1;
        }
        const long rn = pv_op(PVMMUOP_vcpu_counters, v, (unsigned long long)(uintptr_t)&n);
        if (rn) {
            snprintf(g_pv_why, sizeof(g_pv_why), "vcpu_counters:%s", strerror((int)-rn));
            return -1;
        }
        c->hypercalls += k.hypercalls, c->continuations += k.continuations, c->multicalls += k.multicalls;
        c->multicall_entries += k.multicall_entries, c->mmu_updates += k.mmu_updates;
        c->requests += k.mmu_update_requests, c->pt_writes += k.pt_writes;
        c->faults += n.faults, c->flush_all += n.flush_all, c->flush_page += n.flush_page;
        c->shootdowns_sent += n.shootdowns_sent, c->shootdowns_served += n.shootdowns_served;
    }
    uint64_t retries = 0;
    c->install_retries = pv_op(PVMMUOP_install_retries, (unsigned long long)(uintptr_t)&retries, 0) ? -1 : (long long)retries;
    return 0;
}

/* Opens the driver and reads once; 0 when the counts can be had. */
static int pv_open(void)
{
    g_privcmd = open("/dev/xen/privcmd", O_RDWR | O_CLOEXEC);
    if (g_privcmd < 0) {
        snprintf(g_pv_why, sizeof(g_pv_why), "no-privcmd");
        return -1;
    }
    struct pv_counts c;
    if (pv_read(&c)) {
        close(g_privcmd);
        g_privcmd = -1;
        return -1;
    }
    return 0;
}

/* The line of workload W's counts, after its workload line (a line of its
 * own: the PV console cuts lines at 255 bytes): the deltas from a to b, or
 * why there are none. Flushes: local ones are those done on a vCPU's own
 * CPU (whole or one page), remote ones the flush IPIs sent to other CPUs. */
static void pv_print(const char* w, int ok, const struct pv_counts* a, const struct pv_counts* b)
{
    printf("mm-bench: pvmmu workload=%s", w);
    if (!ok) {
        printf(" unavailable=%s\n", g_pv_why);
        return;
    }
    printf(" hypercalls=%llu continuations=%llu multicalls=%llu mc_entries=%llu mmu_updates=%llu"
           " requests=%llu pt_writes=%llu faults=%llu flush_local=%llu flush_remote=%llu",
           b->hypercalls - a->hypercalls, b->continuations - a->continuations, b->multicalls - a->multicalls,
           b->multicall_entries - a->multicall_entries, b->mmu_updates - a->mmu_updates, b->requests - a->requests,
           b->pt_writes - a->pt_writes, b->faults - a->faults,
           (b->flush_all + b->flush_page) - (a->flush_all + a->flush_page), b->shootdowns_sent - a->shootdowns_sent);
    if (a->install_retries >= 0 && b->install_retries >= 0)
        printf(" ad_retries=%lld", b->install_retries - a->install_retries);
    printf("\n");
}
