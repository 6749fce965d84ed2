// The hypercall entry of the core: one register frame in, a result out.
// Xen's continuation semantics (docs/design.md §3): a long batch stops after a bounded
// amount of work with its arguments rewritten to describe what is left; the
// platform lets other work run and issues the same frame again.
#pragma once

#include "core/hypercall_frame.h"
#include "core/hypervisor.h"

namespace pvmmu {

// The Xen release whose interface pvmmu speaks (the libxen-dev headers'),
// as XENVER_version and CPUID leaf 0x40000001 give it: major << 16 | minor.
inline constexpr long kXenVersion = (4 << 16) | 17;

// A table of handlers by hypercall number, built at compile time
// from {number, handler} pairs; find() is nullptr for a number without one.
// The core's table and a platform's own hypercalls both use it.
template <class Handler>
class HypercallTable {
public:
    struct Entry {
        unsigned op;
        Handler handler;
    };
    static constexpr unsigned kSize = 64;

    template <unsigned N>
    constexpr explicit HypercallTable(const Entry (&entries)[N])
    {
        for (const Entry& e : entries) h_[e.op] = e.handler;
    }
    constexpr Handler find(uint64_t op) const { return op < kSize ? h_[op] : nullptr; }

private:
    Handler h_[kSize] = {};
};

// Dispatches frame.op through the core's table; a number not in it goes to
// the platform's own hypercalls (Platform::arch_hypercall; the sim has
// none: -ENOSYS). A direct call and a multicall entry both come here.
HcResult hypercall(Hypervisor& hv, Vcpu& v, HypercallFrame& frame);

// Issues the frame until it completes, letting the platform run between rounds;
// returns the result and how many times the call was preempted.
long hypercall_to_completion(Hypervisor& hv, Vcpu& v, HypercallFrame frame,
                             unsigned* continuations = nullptr);

// The handlers, one per file. Arguments are in frame.arg, as in Xen's ABI.
HcResult do_mmu_update(Hypervisor& hv, Vcpu& v, HypercallFrame& f);
HcResult do_mmuext_op(Hypervisor& hv, Vcpu& v, HypercallFrame& f);
// One mmuext_op request of v's, as an element of a batch is done (its
// policy checks included); 0 or the errno. For an instruction a platform
// emulates with the same meaning (a PV kernel's mov to %cr3: NEW_BASEPTR).
int mmuext_one(Hypervisor& hv, Vcpu& v, const mmuext_op_t& op);
HcResult do_update_va_mapping(Hypervisor& hv, Vcpu& v, HypercallFrame& f);
HcResult do_multicall(Hypervisor& hv, Vcpu& v, HypercallFrame& f);
HcResult do_xen_version(Hypervisor& hv, Vcpu& v, HypercallFrame& f);

} // namespace pvmmu
