// A vCPU's runstate (<xen/vcpu.h>: VCPUOP_get_runstate_info,
// VCPUOP_register_runstate_memory_area; docs/abi.md §10 "Runstate"): which
// of Xen's four states it is in, since when (the guest's system time, the
// clock of vcpu_time_info, boot/time.h), and how long it has spent in each.
// The record's arithmetic is the core's (core/runstate.h); this file keeps
// it per vCPU, under its lock, and writes the guest's registered area.
//
// A pvmmu vCPU owns its CPU, so it is never runnable-but-waiting and never
// blocked (no SCHEDOP_block): it is running from the moment its CPU enters
// it (guest_run) and offline from its VCPUOP_down (and before its first
// entry). Each change is made on the vCPU's own CPU with its page tables
// loaded, which is where the registered area is written, as Xen writes it
// at a context switch. The record is the vCPU's (VcpuArch::runstate); its
// lock orders a change against another vCPU's registration or query.
#include <pvmmu/abi.h>

#include "boot/time.h"
#include "core/runstate.h"
#include "cpu/percpu.h"
#include "mm/core_glue.h"
#include "pv/domain.h"
#include "pv/runstate.h"

namespace pvmmu::x86 {

namespace {

class RunstateLockHeld {
public:
    explicit RunstateLockHeld(VcpuArch& a) : lock_(a.runstate_lock) { lock_.lock(core()->platform()); }
    ~RunstateLockHeld() { lock_.unlock(); }
    RunstateLockHeld(const RunstateLockHeld&) = delete;
    RunstateLockHeld& operator=(const RunstateLockHeld&) = delete;

private:
    TicketLock& lock_;
};

// r into the area at va through the address space loaded now (`as`'s). With
// VMASST_TYPE_runstate_update_flag, Xen's protocol: state_entry_time gets
// XEN_RUNSTATE_UPDATE first, then the record is written with it, then the
// flag goes; a guest that reads the flag set retries. Each step is its own
// copy, and x86 keeps one instruction's stores before the next one's (the
// compiler too: guest_copy is an opaque call). A fault is ignored, as Xen
// ignores it: the registration stands.
void write_area(Vcpu& as, uint64_t va, vcpu_runstate_info r)
{
    Platform& p = core()->platform();
    const bool flag = (guest_domain(as).vm_assist.load(std::memory_order_relaxed) >> VMASST_TYPE_runstate_update_flag) & 1;
    const Vaddr entry{va + offsetof(vcpu_runstate_info, state_entry_time)};
    if (flag) {
        r.state_entry_time |= XEN_RUNSTATE_UPDATE;
        if (p.copy_to_guest(as, entry, &r.state_entry_time, sizeof(uint64_t))) return;
    }
    if (p.copy_to_guest(as, Vaddr{va}, &r, sizeof(r))) return;
    if (flag) {
        r.state_entry_time &= ~XEN_RUNSTATE_UPDATE;
        (void)p.copy_to_guest(as, entry, &r.state_entry_time, sizeof(uint64_t));
    }
}

// Xen 4.17's guest_handle_okay for a 64-bit PV guest: the first byte in the
// guest's part of the address space, the rest not looked at (a record that
// runs past it is never written: copy_to_guest checks the whole range).
bool area_ok(uint64_t va) { return guest_va_ok(va); }

} // namespace

void runstate_change(Vcpu& v, int state)
{
    VcpuArch& a = arch(v);
    const RunstateLockHeld held(a);
    const vcpu_runstate_info r = runstate_enter(a.runstate, state, system_time_now());
    a.runstate = r;
    if (a.runstate_area) write_area(v, a.runstate_area, r);
}

// VCPUOP_register_runstate_memory_area(t, area): t's record goes to the
// address area.addr.p from now on, and at once through the caller's
// address space (Xen's order); 0 stops it. An address not in the guest's
// part of the address space is -EFAULT; one not mapped is taken (the write
// fails silently, as on Xen).
long runstate_register(Vcpu& caller, Vcpu& t, uint64_t arg)
{
    vcpu_register_runstate_memory_area area;
    if (core()->platform().copy_from_guest(caller, &area, Vaddr{arg}, sizeof(area))) return -XEN_EFAULT;
    if (!area_ok(area.addr.p)) return -XEN_EFAULT;
    VcpuArch& a = arch(t);
    const RunstateLockHeld held(a);
    a.runstate_area = area.addr.p;
    if (a.runstate_area)
        write_area(caller, a.runstate_area,
                   &t == &caller ? a.runstate : runstate_up_to_now(a.runstate, system_time_now()));
    return 0;
}

// VCPUOP_get_runstate_info(t, info): t's record up to now.
long runstate_get(Vcpu& caller, Vcpu& t, uint64_t arg)
{
    vcpu_runstate_info r;
    {
        VcpuArch& a = arch(t);
        const RunstateLockHeld held(a);
        r = runstate_up_to_now(a.runstate, system_time_now());
    }
    return core()->platform().copy_to_guest(caller, Vaddr{arg}, &r, sizeof(r)) ? -XEN_EFAULT : 0;
}

} // namespace pvmmu::x86
