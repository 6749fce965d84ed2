// Hypercalls from ring 3 (SPEC §3 "Other hypercalls", docs/abi.md "Bare-metal
// guest ABI"): syscall_entry.S hands over the guest's registers in Xen's
// x86-64 PV order — number in RAX, arguments in RDI, RSI, RDX, R10, R8, R9,
// result in RAX. The hypercalls only a machine with real vCPUs has are in the
// table here; every other number goes to the core's table (core/hypercall.h),
// whose default is -ENOSYS.
#include <atomic>

#include <pvmmu/abi.h>

#include "arch/console.h"
#include "arch/core_glue.h"
#include "arch/guest.h"
#include "arch/percpu.h"
#include "arch/x86.h"
#include "core/hypercall.h"

namespace pvmmu::x86 {

namespace {

// Xen's argument registers, in order.
struct Args {
    uint64_t a[6];
    explicit Args(const TrapFrame& f) : a{f.rdi, f.rsi, f.rdx, f.r10, f.r8, f.r9} {}
};

// console_io(cmd, count, buf): CONSOLEIO_write prints count bytes from buf.
// Read in chunks: bytes before a chunk that faults are already printed (the
// console has no state to restore), the call then fails with -EFAULT.
long do_console_io(Vcpu& v, TrapFrame& f)
{
    const Args a(f);
    if (a.a[0] != CONSOLEIO_write) return -XEN_ENOSYS;
    const int64_t count = int64_t(int32_t(a.a[1]));
    if (count < 0) return -XEN_EINVAL;
    char chunk[128];
    for (int64_t done = 0; done < count;) {
        const size_t n = size_t(count - done) < sizeof(chunk) ? size_t(count - done) : sizeof(chunk);
        if (core()->platform().copy_from_guest(v, chunk, Vaddr{a.a[2] + uint64_t(done)}, n))
            return -XEN_EFAULT;
        console_write(chunk, n);
        done += int64_t(n);
    }
    return 0;
}

// sched_op(cmd, arg): SCHEDOP_yield (a vCPU has its CPU to itself: nothing
// to yield to) and SCHEDOP_shutdown with a sched_shutdown_t.
long do_sched_op(Vcpu& v, TrapFrame& f)
{
    const Args a(f);
    switch (a.a[0]) {
    case SCHEDOP_yield:
        return 0;
    case SCHEDOP_shutdown: {
        sched_shutdown_t s;
        if (core()->platform().copy_from_guest(v, &s, Vaddr{a.a[1]}, sizeof(s))) return -XEN_EFAULT;
        if (s.reason > SHUTDOWN_MAX) return -XEN_EINVAL;
        guest_shutdown(s.reason);
    }
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace

// event_channel_op(cmd, arg): only EVTCHNOP_send on the console port, which
// prints the console ring's output (<xen/io/console.h>): the bytes between
// out_cons and out_prod, at most the ring's size — the indices are the
// guest's and may be anything; they are only ever used masked. The bytes are
// copied out before they are printed, and out_cons then says they were read.
long do_event_channel_op(Vcpu& v, TrapFrame& f)
{
    if (f.rdi != EVTCHNOP_send) return -XEN_ENOSYS;
    evtchn_send_t s;
    if (core()->platform().copy_from_guest(v, &s, Vaddr{f.rsi}, sizeof(s))) return -XEN_EFAULT;
    if (s.port != kConsolePort) return -XEN_EINVAL;
    xencons_interface& ring = *guest_domain(v).console;
    std::atomic_ref<XENCONS_RING_IDX> cons_ref(ring.out_cons), prod_ref(ring.out_prod);
    XENCONS_RING_IDX cons = cons_ref.load(std::memory_order_relaxed);
    const XENCONS_RING_IDX prod = prod_ref.load(std::memory_order_acquire);
    if (XENCONS_RING_IDX(prod - cons) > sizeof(ring.out)) return -XEN_EINVAL;
    char buf[sizeof(ring.out)];
    size_t n = 0;
    for (; cons != prod; ++cons)
        buf[n++] = std::atomic_ref<char>(ring.out[MASK_XENCONS_IDX(cons, ring.out)]).load(std::memory_order_relaxed);
    console_write(buf, n);
    cons_ref.store(cons, std::memory_order_release);
    return 0;
}

namespace {

using ArchHandler = long (*)(Vcpu&, TrapFrame&);

constexpr HypercallTable<ArchHandler>::Entry kArchEntries[] = {
    {__HYPERVISOR_set_trap_table, do_set_trap_table},
    {__HYPERVISOR_stack_switch, do_stack_switch},
    {__HYPERVISOR_set_callbacks, do_set_callbacks},
    {__HYPERVISOR_console_io, do_console_io},
    {__HYPERVISOR_iret, do_iret},
    {__HYPERVISOR_sched_op, do_sched_op},
    {__HYPERVISOR_callback_op, do_callback_op},
    {__HYPERVISOR_vcpu_op, do_vcpu_op},
    {__HYPERVISOR_event_channel_op, do_event_channel_op},
    {__HYPERVISOR_pvmmu_op, do_pvmmu_op},
};
constexpr HypercallTable<ArchHandler> kArch(kArchEntries);

} // namespace

void syscall_dispatch(TrapFrame* f)
{
    Vcpu& v = *this_cpu().vcpu;
    const uint64_t op = f->rax;
    if (const ArchHandler h = kArch.find(op)) {
        f->rax = uint64_t(h(v, *f));
        return;
    }
    const Args a(*f);
    HypercallFrame hf{op, {a.a[0], a.a[1], a.a[2], a.a[3], a.a[4], a.a[5]}};
    const HcResult r = hypercall(*core(), v, hf);
    if (!r.preempted) {
        f->rax = uint64_t(r.rc);
        return;
    }
    // Xen's continuation: the arguments now describe what is left, and the
    // guest re-executes its SYSCALL (2 bytes) with RAX still the number, so
    // interrupts are taken between the rounds.
    f->rdi = hf.arg[0], f->rsi = hf.arg[1], f->rdx = hf.arg[2];
    f->r10 = hf.arg[3], f->r8 = hf.arg[4], f->r9 = hf.arg[5];
    f->rip -= 2;
}

} // namespace pvmmu::x86
