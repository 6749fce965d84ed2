// sched_op's sub-ops that end or watch a domain, and the TLB flushes with a
// vCPU mask, from the guest's side (docs/abi.md §10 "Shutdown"), run on
// pvmmu (qemu_guest_conform) and on Xen 4.17 as dom0 (xen_conform_guest)
// with the same answers where an unprivileged domain and dom0 get the same:
// the errnos of SCHEDOP_shutdown_code, SCHEDOP_remote_shutdown and
// SCHEDOP_watchdog (Xen's two timers: taken, re-armed, freed, refused).
// On pvmmu only, what Xen gives a privileged dom0 otherwise: another
// domain's (or its own) remote shutdown and SCHEDOP_pin_override are -EPERM.
// Nothing here shuts the domain down: every watchdog armed is freed again.
#include "tiny_guest.h"

#include <xen/sched.h>

using namespace tiny;

namespace {

// An address in the hypervisor's half that no guest may read: -EFAULT.
constexpr uint64_t kUnreadable = XENPV_VIRT_BASE + (1ull << 38);
// No domain has this id (below DOMID_FIRST_RESERVED, never given out here).
constexpr domid_t kNoDomain = 0x7000;

long sched(unsigned cmd, const void* arg) { return hypercall(__HYPERVISOR_sched_op, cmd, uint64_t(arg)); }

long watchdog(uint32_t id, uint32_t timeout)
{
    sched_watchdog_t w{id, timeout};
    return sched(SCHEDOP_watchdog, &w);
}

long flush_multi(unsigned cmd, uint64_t va, const void* mask)
{
    mmuext_op_t op{};
    op.cmd = cmd;
    op.arg1.linear_addr = va;
    op.arg2.vcpumask.p = const_cast<void*>(mask);
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

} // namespace

void sched_checks(bool pvmmu)
{
    const void* bad = reinterpret_cast<const void*>(kUnreadable);
    check("SCHEDOP_shutdown_code from an unreadable address: -EFAULT", sched(SCHEDOP_shutdown_code, bad), -XEN_EFAULT);
    check("SCHEDOP_remote_shutdown from an unreadable address: -EFAULT", sched(SCHEDOP_remote_shutdown, bad),
          -XEN_EFAULT);
    sched_remote_shutdown_t r{kNoDomain, SHUTDOWN_poweroff};
    check("SCHEDOP_remote_shutdown of no domain: -ESRCH", sched(SCHEDOP_remote_shutdown, &r), -XEN_ESRCH);
    r.domain_id = DOMID_SELF;   // looked up as an id: no domain has it
    check("SCHEDOP_remote_shutdown of DOMID_SELF: -ESRCH", sched(SCHEDOP_remote_shutdown, &r), -XEN_ESRCH);
    if (pvmmu) {
        r.domain_id = 1;   // itself: a domain id that exists
        check("SCHEDOP_remote_shutdown of a domain, unprivileged: -EPERM", sched(SCHEDOP_remote_shutdown, &r),
              -XEN_EPERM);
        check("SCHEDOP_pin_override, not the hardware domain: -EPERM", sched(SCHEDOP_pin_override, bad), -XEN_EPERM);
    }

    check("SCHEDOP_watchdog from an unreadable address: -EFAULT", sched(SCHEDOP_watchdog, bad), -XEN_EFAULT);
    check("SCHEDOP_watchdog id 3: -EINVAL (two timers)", watchdog(3, 1000), -XEN_EINVAL);
    check("SCHEDOP_watchdog id 1 not in use: -EINVAL", watchdog(1, 1000), -XEN_EINVAL);
    check("SCHEDOP_watchdog id 0, 1000 s: timer 1", watchdog(0, 1000), 1);
    check("SCHEDOP_watchdog id 0 again: timer 2", watchdog(0, 1000), 2);
    // Xen 4.17 computes it in 32-bit unsigned arithmetic (domain_watchdog's
    // `id == NR_DOMAIN_WATCHDOG_TIMERS ? -ENOSPC : id + 1`), so its caller
    // gets -ENOSPC zero-extended, a positive number; pvmmu's is -ENOSPC
    // (docs/abi.md §10 "Shutdown").
    check("SCHEDOP_watchdog id 0, both in use: -ENOSPC", watchdog(0, 1000),
          pvmmu ? -XEN_ENOSPC : long(uint32_t(-XEN_ENOSPC)));
    check("SCHEDOP_watchdog id 1, re-armed: 0", watchdog(1, 2000), 0);
    check("SCHEDOP_watchdog id 1, timeout 0 frees it: 0", watchdog(1, 0), 0);
    check("SCHEDOP_watchdog id 1 freed: -EINVAL", watchdog(1, 0), -XEN_EINVAL);
    check("SCHEDOP_watchdog id 0: timer 1 again", watchdog(0, 1000), 1);
    check("SCHEDOP_watchdog id 1 freed again: 0", watchdog(1, 0), 0);
    check("SCHEDOP_watchdog id 2 freed: 0", watchdog(2, 0), 0);

    // Linux's TLB shootdowns: a vCPU mask (here vCPU 0, the caller).
    const unsigned long self = 1;
    check("MMUEXT_TLB_FLUSH_MULTI of vCPU 0", flush_multi(MMUEXT_TLB_FLUSH_MULTI, 0, &self), 0);
    check("MMUEXT_INVLPG_MULTI of vCPU 0", flush_multi(MMUEXT_INVLPG_MULTI, XENPV_VIRT_BASE, &self), 0);
    check("MMUEXT_TLB_FLUSH_MULTI with an unreadable mask: -EINVAL", flush_multi(MMUEXT_TLB_FLUSH_MULTI, 0, bad),
          -XEN_EINVAL);
    check("MMUEXT_INVLPG_MULTI with an unreadable mask: -EINVAL",
          flush_multi(MMUEXT_INVLPG_MULTI, XENPV_VIRT_BASE, bad), -XEN_EINVAL);
}
