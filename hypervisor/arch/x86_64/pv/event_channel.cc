// event_channel_op (<xen/event_channel.h>; docs/abi.md §10 "Console"): the
// x86 side of a guest's event channels. Today the one channel is the console
// ring's (console.h kConsolePort).
#include <atomic>

#include <pvmmu/abi.h>

#include "mm/core_glue.h"
#include "pv/console.h"
#include "pv/hypercall.h"
#include "pv/surface.h"

namespace pvmmu::x86 {

// event_channel_op(cmd, arg): only EVTCHNOP_send on the console port, which
// prints the console ring's output (<xen/io/console.h>): the bytes between
// out_cons and out_prod, at most the ring's size — the indices are the
// guest's and may be anything; they are only ever used masked. The bytes are
// copied out before they are printed, and out_cons then says they were read.
long do_event_channel_op(Vcpu& v, HypercallFrame& f)
{
    if (!arch_subop_known(__HYPERVISOR_event_channel_op, uint32_t(f.arg[0]))) return -XEN_ENOSYS;   // EVTCHNOP_send only (an int cmd)
    evtchn_send_t s;
    if (core()->platform().copy_from_guest(v, &s, Vaddr{f.arg[1]}, sizeof(s))) return -XEN_EFAULT;
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
    guest_console_put(v, buf, n);
    cons_ref.store(cons, std::memory_order_release);
    return 0;
}

} // namespace pvmmu::x86
