// BareMetal; see mm/platform.h.
#include "mm/platform.h"

#include <pvmmu/abi.h>

#include "core/hypervisor.h"

#include "boot/exit.h"
#include "cpu/percpu.h"
#include "cpu/shootdown.h"
#include "cpu/traps.h"
#include "cpu/x86.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/layout.h"
#include "mm/m2p_map.h"
#include "mm/native_window.h"
#include "mm/paging.h"
#include "pv/descriptors.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

void BareMetal::flush_tlbs(CpuMask cpus, FlushRequest req) { shootdown_flush(cpus, req); }

void BareMetal::relax()
{
    shootdown_serve();
    pause();
}

// NEW_BASEPTR of the running vCPU: its new L4 (validated, so it holds the
// hypervisor's slots) goes into CR3, which also flushes this CPU's TLB.
void BareMetal::load_base(Vcpu& v)
{
    if (&v == this_vcpu()) write_cr3(maddr_of(v.guest_table).v);
}

// MMUEXT_SET_LDT: validated copies of the guest's descriptors (pv/descriptors.cc).
int BareMetal::set_ldt(Vcpu& v, Vaddr base, uint32_t ents) { return guest_set_ldt(v, base, ents); }

// The hypervisor's own L4 entries (slots 257, 261, 262; P|RW, never US), so
// a guest's L4 can stay loaded while the hypervisor runs; in slot 256 the
// M2P, read-only to every guest as on Xen; and in slot 271 the owner's unsafe
// native window, which only a benchmark domain has.
uint64_t BareMetal::reserved_l4_entry(DomId owner, unsigned slot) const
{
    if (slot == HV_SLOT_M2P) return m2p_map_l4e();
    if (slot == HV_SLOT_NATIVE_WINDOW) return native_window_l4e(owner);
    return slot < kEntriesPerTable ? dmap<const uint64_t>(hv_root())[slot] : 0;
}

} // namespace pvmmu::x86
