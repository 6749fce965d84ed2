// Where a vCPU's vcpu_info lives (<xen/vcpu.h> VCPUOP_register_vcpu_info;
// docs/abi.md §10 "vcpu_info"): shared_info's slot for it until the guest
// registers a place of its own, as Xen does. pvmmu writes a vcpu_info in
// three places (the time at the vCPU's start, pv/run.cc; the virtual CR2
// of a bounced #PF and of `mov` to %cr2): each asks guest_vcpu_info.
//
// The frame is held as Xen holds it: a general and a writable type
// reference for the domain's life (Domain::held, released at teardown), so
// it never becomes a page table while the hypervisor writes into it.
#include <pvmmu/abi.h>

#include "core/refs.h"
#include "core/vcpu_info_rules.h"
#include "mm/core_glue.h"
#include "pv/domain.h"
#include "pv/vcpu_info.h"

namespace pvmmu::x86 {

vcpu_info* guest_shared_vcpu_info(Vcpu& v)
{
    GuestDomain& d = guest_domain(v);
    return d.shared && v.id < XEN_LEGACY_MAX_VCPUS ? &d.shared->vcpu_info[v.id] : nullptr;
}

// VCPUOP_register_vcpu_info(t, {mfn, offset}) with Xen 4.17's checks
// (core/vcpu_info_rules.h), then the frame's: the domain's and able to be
// writable (not a page table), else -EINVAL. The current contents move there (zeros with
// the upcall masked for a vCPU without a shared_info slot), then, as Xen
// marks everything pending so that no event is lost, evtchn_upcall_pending
// and every evtchn_pending_sel bit are set; the core's events then write
// there (set_event_vcpu_info).
long vcpu_info_register(Vcpu& caller, Vcpu& t, uint64_t arg)
{
    vcpu_register_vcpu_info r;
    Hypervisor& hv = *core();
    if (hv.platform().copy_from_guest(caller, &r, Vaddr{arg}, sizeof(r))) return -XEN_EFAULT;
    if (const long rc = vcpu_info_offset_check(r.offset)) return rc;
    VcpuArch& a = arch(t);
    const VcpuState s = a.state.load(std::memory_order_acquire);
    if (const long rc = vcpu_info_target_check(&t == &caller, s == VcpuState::Up || s == VcpuState::Busy)) return rc;
    GuestDomain& g = guest_domain(caller);
    g.vcpu_info_lock.lock(hv.platform());
    long rc = vcpu_info_once_check(a.info.load(std::memory_order_relaxed) != nullptr);
    if (!rc && hold_writable(hv, g.dom, Mfn{r.mfn})) rc = -XEN_EINVAL;
    if (!rc) {
        auto* info = reinterpret_cast<vcpu_info*>(static_cast<uint8_t*>(hv.mem().frame(Mfn{r.mfn})) + r.offset);
        if (const vcpu_info* old = guest_vcpu_info(t)) {
            *info = *old;
        } else {
            *info = vcpu_info{};
            info->evtchn_upcall_mask = 1;
        }
        a.info.store(info, std::memory_order_release);
        if (DomainEvents* e = g.dom.events) set_event_vcpu_info(*e, t.id, info);
        // Atomic, as every raise on another CPU changes these bytes. No
        // kick (core/src/evtchn_2l.cc evtchn_mark_upcall's rule): the target
        // is the caller itself or a vCPU that is down
        // (core/vcpu_info_rules.h), whose first run checks everything.
        __atomic_store_n(&info->evtchn_pending_sel, ~xen_ulong_t(0), __ATOMIC_SEQ_CST);
        __atomic_store_n(&info->evtchn_upcall_pending, uint8_t(1), __ATOMIC_SEQ_CST);
    }
    g.vcpu_info_lock.unlock();
    return rc;
}

} // namespace pvmmu::x86
