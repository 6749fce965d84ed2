// The grant guest's abuse cases (main.cc says what the guest is): what a
// mapper can try against a real granter, and a granter against its mapper,
// each refused with Xen's status and nothing changed (docs/security.md
// §7.18), then the whole-machine invariant check.
#include "grant_guest/grant_guest.h"

using namespace tiny;

namespace grant_guest {

namespace {

int16_t map(grant_ref_t ref, uint32_t flags, uint64_t va, grant_handle_t& handle, domid_t dom)
{
    gnttab_map_grant_ref_t m{};
    m.host_addr = va;
    m.flags = flags;
    m.ref = ref;
    m.dom = dom;
    m.status = 1;
    if (gnttab(GNTTABOP_map_grant_ref, &m) != 0) return 1;
    handle = m.handle;
    return m.status;
}
int16_t unmap(uint64_t va, grant_handle_t handle)
{
    gnttab_unmap_grant_ref_t u{va, 0, handle, 1};
    return gnttab(GNTTABOP_unmap_grant_ref, &u) != 0 ? int16_t(1) : u.status;
}

// A page of the mapper's own, marked, where maps that must be refused are
// aimed: the mark still read afterwards is the refusal's "nothing changed".
constexpr unsigned kMarkPage = 300;
constexpr uint8_t kMark = 0xa5;
volatile uint8_t& mark() { return *reinterpret_cast<volatile uint8_t*>(scratch_va(kMarkPage)); }

bool invariants_clean()
{
    static pvmmu_invariants inv;
    return hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_check_invariants, uint64_t(&inv)) == 0;
}

// The maptrack filled: the pair's configs give the mapper one maptrack frame
// (max_maptrack_frames = 1, tests/qemu/tests.cmake), Xen's 256 handles, one
// of them the ring's. The read-only grants ref + 2, + 6, + 7 take turns, so
// no entry comes near Xen's 127 pins.
void fill_maptrack(domid_t other)
{
    constexpr unsigned kFree = gnt::kHandlesPerFrame - 1;
    static grant_handle_t handles[kFree];
    const grant_ref_t refs[3] = {g_ref + 2, g_ref + 6, g_ref + 7};
    unsigned n = 0;
    while (n < kFree && map(refs[n % 3], GNTMAP_host_map | GNTMAP_readonly, scratch_va(2 + n), handles[n], other) ==
                            GNTST_okay)
        ++n;
    check("maps until the maptrack is full: 255 beside the ring's", n, kFree);
    check("  the last one reads the granted page", *reinterpret_cast<volatile uint8_t*>(scratch_va(1 + n)), 0x5a);
    grant_handle_t h = 0;
    check("exhaust the maptrack: the next map is GNTST_no_space",
          map(g_ref + 2, GNTMAP_host_map | GNTMAP_readonly, scratch_va(kMarkPage), h, other), GNTST_no_space);
    check("  the address aimed at still maps the mapper's own page", mark(), kMark);
    check("whole-machine invariants with the maptrack full", invariants_clean(), 1);
    unsigned unmapped = 0;
    for (unsigned i = 0; i < n; ++i) unmapped += unmap(scratch_va(2 + i), handles[i]) == GNTST_okay;
    check("  every one of them unmaps", unmapped, n);
}

} // namespace

void mapper_abuse()
{
    const domid_t other = domid_t(g_other);
    const uint64_t va = scratch_va(1);
    grant_handle_t h = 0;
    check("map writable a grant given read-only: GNTST_general_error", map(g_ref + 2, GNTMAP_host_map, va, h, other),
          GNTST_general_error);
    check("map it read-only", map(g_ref + 2, GNTMAP_host_map | GNTMAP_readonly, va, h, other), GNTST_okay);
    check("  its bytes read", *reinterpret_cast<volatile uint8_t*>(va), 0x5a);
    gnttab_copy_t c{};
    c.source.u.gmfn = mfn_of(g_copy_page);
    c.source.domid = DOMID_SELF;
    c.dest.u.ref = g_ref + 2;
    c.dest.domid = other;
    c.len = 8;
    c.flags = GNTCOPY_dest_gref;
    check("copy into a read-only grant: GNTST_general_error",
          gnttab(GNTTABOP_copy, &c) == 0 ? c.status : 1, GNTST_general_error);
    check("unmap it", unmap(va, h), GNTST_okay);
    check("unmap it twice: GNTST_bad_handle", unmap(va, h), GNTST_bad_handle);
    check("unmap a handle never given: GNTST_bad_handle", unmap(va, 200), GNTST_bad_handle);
    check("map writable a granted page-table frame: GNTST_general_error",
          map(g_ref + 3, GNTMAP_host_map, va, h, other), GNTST_general_error);
    check("map an entry never granted: GNTST_general_error", map(g_ref + 4, GNTMAP_host_map, va, h, other),
          GNTST_general_error);
    check("map a ref past the table: GNTST_bad_gntref", map(600, GNTMAP_host_map, va, h, other), GNTST_bad_gntref);
    check("map from a domain that does not exist: GNTST_bad_domain", map(g_ref, GNTMAP_host_map, va, h, 7),
          GNTST_bad_domain);
    // ref + 5 maps while granted; the granter revokes it later
    // (mapper_after_revoke).
    check("map ref + 5 read-only while it is granted", map(g_ref + 5, GNTMAP_host_map | GNTMAP_readonly, va, h, other),
          GNTST_okay);
    check("  and unmap it", unmap(va, h), GNTST_okay);
    mark() = kMark;
    fill_maptrack(other);
    check("whole-machine invariants with the ring mapped", invariants_clean(), 1);
}

void mapper_after_revoke()
{
    grant_handle_t h = 0;
    check("map after the granter revoked it (ref + 5): GNTST_general_error",
          map(g_ref + 5, GNTMAP_host_map | GNTMAP_readonly, scratch_va(kMarkPage), h, domid_t(g_other)),
          GNTST_general_error);
    check("  the address aimed at still maps the mapper's own page", mark(), kMark);
    check("whole-machine invariants after the granter's unmap of this domain's handle and its revocation",
          invariants_clean(), 1);
}

void granter_abuse(uint64_t addr, grant_handle_t handle)
{
    // A handle indexes the caller's own maptrack: another domain's live
    // handle is, to this domain, one it was never given.
    check("unmap another domain's handle: GNTST_bad_handle", unmap(addr, handle), GNTST_bad_handle);
}

void mapper_outlives_granter(evtchn_port_t port, grant_handle_t ring)
{
    // The granter's end closes when its teardown starts (pv/run.cc leave:
    // its ports first, then its grants); polled, 10 ms at a time.
    const uint64_t until = now() + 10000 * 1000000ull;
    evtchn_status_t st{DOMID_SELF, port, 0, 0, {}};
    while (now() < until) {
        st = evtchn_status_t{DOMID_SELF, port, 0, 0, {}};
        if (hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_status, uint64_t(&st)) != 0 ||
            st.status != EVTCHNSTAT_interdomain)
            break;
        evtchn_port_t ports[1] = {port};
        sched_poll_t p{};
        set_xen_guest_handle(p.ports, ports);
        p.nr_ports = 1;
        p.timeout = now() + 10000000;
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&p));
    }
    check("the granter's end of the channel closed by its teardown", st.status, EVTCHNSTAT_unbound);
    // Its grants go dying right after its ports: a map in between still
    // works (and is undone), so the refusal is waited for, as briefly.
    const uint64_t va = scratch_va(1);
    grant_handle_t h = 0;
    int16_t rc = GNTST_okay;
    while (now() < until && (rc = map(g_ref, GNTMAP_host_map, va, h, domid_t(g_other))) == GNTST_okay)
        (void)unmap(va, h);
    // The ring's frame keeps the granter registered (docs/architecture.md
    // §11 "Teardown"): its dying table refuses the pin.
    check("map from a domain being torn down: GNTST_general_error", rc, GNTST_general_error);
    check("the ring unmaps after the granter's teardown", unmap(scratch_va(0), ring), GNTST_okay);
    // That unmap released the last pin of the granter's grants: what its
    // teardown kept for it is given back and the domain is gone, by the
    // unmap, or, when the unpin came while that teardown was still in its
    // pass on the granter's CPU, by the pass it then makes itself
    // (core/domain_teardown.h): waited for, as briefly.
    while (now() < until &&
           (rc = map(g_ref, GNTMAP_host_map, scratch_va(1), h, domid_t(g_other))) == GNTST_general_error)
        hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0);
    check("  and the granter with it: a map is GNTST_bad_domain", rc, GNTST_bad_domain);
    check("whole-machine invariants after the granter's teardown", invariants_clean(), 1);
}

} // namespace grant_guest
