// What only the hypervisor knows, through pvmmu_op (docs/abi.md §10): the
// runtime's counters, the peer domain, the frames a test may not map, the
// policy bits it denies itself. On Xen there is no pvmmu_op: each answer is
// a refusal.
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

pvmmu_facts g_facts;   // PVMMUOP_facts, asked for once at boot (they never change)
bool g_have_facts;     // false: no pvmmu_op (Xen)

} // namespace

void load_facts()
{
    g_have_facts = hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&g_facts)) == 0;
    if (!g_have_facts) g_facts.peer_domid = DOMID_INVALID;
}

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest::xenpv;

namespace pvmmu::guest::rt {

// It counts no TLB misses (hardware does not tell it: tlb_misses_counted stays
// false), nor cleans (the x86 walker is coherent: 0).
bool platform_counters(unsigned vcpu, PlatformCounters& out)
{
    pvmmu_vcpu_counters c;
    if (hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, vcpu, uint64_t(&c)) != 0) return false;
    out = PlatformCounters{.faults = c.faults,
                           .flush_all = c.flush_all,
                           .flush_page = c.flush_page,
                           .shootdowns_sent = c.shootdowns_sent,
                           .shootdowns_served = c.shootdowns_served};
    return true;
}

bool foreign_domain(ForeignDomain& out)
{
    if (g_facts.peer_domid == DOMID_INVALID) return false;
    out = ForeignDomain{g_facts.peer_domid, Mfn{g_facts.peer_first_mfn}, g_facts.peer_nr_frames};
    return true;
}
bool pvmmu_op_available() { return g_have_facts; }
Mfn hypervisor_frame() { return Mfn{g_facts.hypervisor_mfn}; }
Mfn io_frame() { return Mfn{g_facts.io_mfn}; }
bool deny(uint32_t bits) { return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, bits) == 0; }
bool hypervisor_install_retries(uint64_t& out)
{
    return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_install_retries, uint64_t(&out)) == 0;
}
// Benchmarking only: a lock cmpxchg on the entry's alias in the unsafe native
// window, which the hypervisor maps only for a domain started with the module
// word unsafe-native-pt (docs/abi.md §10). Anywhere else the window is not
// mapped, the access faults, and the answer is a refusal.
bool native_pte_cmpxchg(Maddr entry, uint64_t& expected, uint64_t desired, bool& swapped)
{
    Gpfn g;
    if ((entry.v & 7) || !guest().gpfn_of(Mfn{entry.v >> kPageShift}, g)) return false;
    const uint64_t at = (g.v << kPageShift) + (entry.v & (kPageSize - 1));
    return this_cpu().mem.cmpxchg(Va{PVMMU_UNSAFE_NATIVE_WINDOW + at}, expected, desired, swapped);
}

} // namespace pvmmu::guest::rt
