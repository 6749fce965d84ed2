// What the grant guest's files share (main.cc says what the guest is;
// abuse.cc holds the cases that must be refused).
#pragma once


#include "tiny_guest.h"
#include "tiny_events.h"

#include <xen/event_channel.h>
#include <xen/grant_table.h>

namespace grant_guest {

extern const start_info_t* g_si;
extern volatile shared_info_t* g_sh;
extern unsigned g_other, g_ref;        // the other domain; the ring's gref (ref + 1..7 follow it)
extern uint8_t g_copy_page[4096];      // the granter's copy page; the mapper's own copy frame

namespace gnt {
// Xen's maptrack entry is 16 bytes: 256 handles per maptrack frame.
inline constexpr unsigned kHandlesPerFrame = 256;
}

inline long gnttab(unsigned cmd, void* arg, unsigned n = 1)
{
    return tiny::hypercall(__HYPERVISOR_grant_table_op, cmd, uint64_t(arg), n);
}
// The machine frame of a page of the image (start_info's P2M list).
inline uint64_t mfn_of(const void* p) { return tiny::p2m(g_si)[(uint64_t(p) - XENPV_VIRT_BASE) >> 12]; }
// A page of the domain's physmap the guest does not use: from the top (the
// loader puts everything right after the image).
inline uint64_t scratch_va(unsigned i) { return XENPV_VIRT_BASE + ((g_si->nr_pages - 1 - i) << 12); }

// The pvclock of vCPU 0's slot: system time, ns.
inline uint64_t now() { return tiny::pvclock_ns(g_sh->vcpu_info[0].time); }

// The mapper's abuse cases (abuse.cc): docs/security.md §7.18's that a
// guest can try against a real granter, each refused with Xen's status,
// then the whole-machine invariant check with the ring mapped
// (PVMMUOP_check_invariants: the mapper's config has the module word
// invariant-check).
void mapper_abuse();
// Once the granter revoked ref + 5 (the ring's `release` says so), a map
// of it is refused, and the invariants hold.
void mapper_after_revoke();
// The granter's unmap of the mapper's live handle (`handle` at `addr` in
// the mapper's address space, published in the ring), refused: no handle
// of the granter's.
void granter_abuse(uint64_t addr, grant_handle_t handle);

// The granter's teardown with its ring mapped (abuse.cc; the mapper's word
// outlive-granter, the granter's exit-mapped): once `port` shows the
// granter gone (its end closed: EVTCHNSTAT_unbound), a new map of its grant
// is refused, the ring still unmaps (handle `ring`), which gives back what
// the granter's teardown kept for it (the granter no longer exists), and
// the invariants hold.
void mapper_outlives_granter(evtchn_port_t port, grant_handle_t ring);

} // namespace grant_guest
