// The storage of a bare-metal domain's grant table; see pv/grants.h. One run
// of free frames at the top of memory: first the table frames, which become
// the domain's (setup_table hands their machine frame numbers to the guest,
// which maps them as any frame of its own), then the active entries and the
// maptrack, the hypervisor's, reached through the direct map.
#include <new>
#include <string.h>

#include "boot/boot_defs.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "pv/grants.h"

namespace pvmmu::x86 {

namespace {

constexpr uint64_t pages(uint64_t bytes) { return (bytes + kPageSize - 1) >> kPageShift; }

// What the storage of these limits takes, in bytes: the active entries of
// every table frame, then the maptrack.
constexpr uint64_t active_bytes(const GrantLimits& l) { return uint64_t(l.max_grant_frames) * gnt::kEntriesPerFrame * sizeof(ActiveGrant); }
constexpr uint64_t maptrack_bytes(const GrantLimits& l)
{
    return uint64_t(l.max_maptrack_frames) * gnt::kHandlesPerMaptrackFrame * sizeof(MapTrack);
}

// The most a domain's grant table takes, as the launchers size the machine.
static_assert((kMaxGrantFrames + pages(active_bytes(GrantLimits{})) + pages(maptrack_bytes(GrantLimits{}))) * kPageSize <=
              uint64_t(HV_GRANT_MIB) << 20);

// A frame the guest's P2M does not name (Xen's INVALID_M2P_ENTRY, ~0): the
// table frames are the domain's but none of its pseudo-physical frames.
constexpr uint64_t kNoGpfn = ~0ull;

} // namespace

int guest_grants_init(GuestDomain& g, const GrantLimits& limits)
{
    if (int rc = int(grant_limits_check(limits))) return rc;
    Hypervisor& hv = *core();
    const uint32_t nt = limits.max_grant_frames;
    const uint64_t na = active_bytes(limits), ns = pages(na + maptrack_bytes(limits));
    Mfn first;
    if (int rc = core_free_run_high(nt + ns, first)) return rc;
    for (uint32_t i = 0; i < nt; ++i) {
        const Mfn m{first.v + i};
        g.grant_frames[i] = m;
        hv.m2p(m) = kNoGpfn;
        hv.frame(m).owner.store(g.dom.id, std::memory_order_release);
    }
    // The domain owns its table frames from now on and may map them before
    // setup_table zeroes them: whatever memory held before goes (as Xen
    // hands out grant frames cleared).
    memset(dmap<uint8_t>(maddr_of(first)), 0, uint64_t(nt) << kPageShift);
    g.dom.nr_frames += nt;
    g.grant_nr_frames = nt;
    g.grant_storage = Mfn{first.v + nt};
    g.grant_storage_frames = ns;
    for (uint64_t k = 0; k < ns; ++k) hv.frame(Mfn{g.grant_storage.v + k}).owner.store(kOwnerXen, std::memory_order_release);

    // The run is contiguous in the direct map: the two arrays one after the other.
    uint8_t* base = dmap<uint8_t>(maddr_of(g.grant_storage));
    memset(base, 0, ns << kPageShift);
    static_assert(alignof(ActiveGrant) <= kPageSize && alignof(MapTrack) <= alignof(ActiveGrant) &&
                  sizeof(ActiveGrant) % alignof(MapTrack) == 0);
    ActiveGrant* active = reinterpret_cast<ActiveGrant*>(base);
    MapTrack* maptrack = reinterpret_cast<MapTrack*>(base + na);
    const uint32_t nr_active = nt * gnt::kEntriesPerFrame;
    const uint32_t nr_handles = limits.max_maptrack_frames * gnt::kHandlesPerMaptrackFrame;
    for (uint32_t i = 0; i < nr_active; ++i) new (&active[i]) ActiveGrant{};
    for (uint32_t i = 0; i < nr_handles; ++i) new (&maptrack[i]) MapTrack{};
    g.dom.grants = new (g.grants_mem)
        GrantTable(g.dom.id, limits, GrantStorage{g.grant_frames, nt, active, maptrack, nr_handles});
    printk("domain %u: grant table: up to %u frames (%u entries) from mfn 0x%lx, %u maptrack frames (%u handles); "
           "%lu frames of hypervisor storage\n", g.dom.id, nt, nr_active, first.v, limits.max_maptrack_frames,
           nr_handles, ns);
    return 0;
}

void guest_grants_release(GuestDomain& g, uint64_t& freed, uint64_t& kept)
{
    if (!g.grant_nr_frames) return;
    Hypervisor& hv = *core();
    const DomId id = g.dom.id;
    uint32_t back = 0;
    for (uint32_t i = 0; i < g.grant_nr_frames; ++i)
        if (hv.frame(g.grant_frames[i]).owner.load(std::memory_order_acquire) != id) ++back;
    const uint32_t held = g.grant_nr_frames - back;
    freed -= back;
    kept -= held;
    // Registered still: another domain may pin one of its grants (or hold a
    // frame of it) and so reach its active entries; the storage stays, as
    // any frame still referenced does.
    const bool registered = hv.domain(id) == &g.dom;
    if (!registered)
        for (uint64_t k = 0; k < g.grant_storage_frames; ++k)
            hv.frame(Mfn{g.grant_storage.v + k}).owner.store(kOwnerFree, std::memory_order_release);
    printk("pvmmu: domain %u: grant table: %u frames given back, %u kept; %lu frames of hypervisor storage %s\n", id,
           back, held, g.grant_storage_frames, registered ? "kept" : "given back");
}

} // namespace pvmmu::x86
