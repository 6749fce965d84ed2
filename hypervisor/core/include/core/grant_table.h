// Grant tables, version 1 (docs/architecture.md "Grant tables"; the ABI is
// <xen/grant_table.h>): per domain, the shared entries a guest fills in to
// offer its frames to another domain, the hypervisor's active state of each
// entry in use (who pinned it, which frame, how many read-only and writable
// pins), and the maptrack of the mappings the domain itself made of others'
// grants.
//
// A grant mapping is an L1 entry the grant code installs. It holds exactly the
// references any L1 entry holds (core/pagetable.h get_entry_refs: a general
// reference, and a writable type reference when RW), so the frame-type rules
// apply unchanged: a page-table or descriptor frame is never mapped writable,
// and a granted frame mapped writable cannot become a page table. What the
// grant adds is the pin on the granter's active entry, held by the maptrack
// entry: while it lives the granter's shared entry keeps GTF_reading (and
// GTF_writing for a writable pin), which is how the granter knows the frame
// is still in use.
//
// Storage comes from the platform (frames for the shared entries, the active
// entries, the maptrack): the core allocates nothing.
#pragma once

#include <pvmmu/abi.h>
#include <xen/grant_table.h>

#include "core/hypercall_frame.h"
#include "core/hypervisor.h"
#include "core/spinlock.h"

namespace pvmmu {

namespace gnt {
// v1 entries are 8 bytes: 512 per 4 KiB frame.
inline constexpr uint32_t kEntriesPerFrame = uint32_t(kPageSize / sizeof(grant_entry_v1_t));
// Xen's defaults (xl.cfg(5) max_grant_frames, max_maptrack_frames).
inline constexpr uint32_t kDefaultMaxFrames = 64;
inline constexpr uint32_t kDefaultMaxMaptrackFrames = 1024;
// Xen's maptrack entry is 16 bytes: 256 handles per maptrack frame.
inline constexpr uint32_t kHandlesPerMaptrackFrame = 256;
// Xen refuses a pin that would bring a count to 128 (its 8-bit pin fields).
inline constexpr uint32_t kMaxPins = 0x7f;
} // namespace gnt

// The hypervisor's state of one grant entry while pinned (Xen's active entry).
struct ActiveGrant {
    uint32_t ro = 0;     // read-only pins: mappings and copies in flight
    uint32_t rw = 0;     // writable pins
    DomId domid = 0;     // the domain that holds the pins
    Mfn frame{0};        // the frame named by the entry at the first pin
    bool pinned() const { return ro + rw != 0; }
};

// One mapping this domain made of another's grant (a maptrack entry; the
// handle is its index).
struct MapTrack {
    enum class State : uint8_t { Free, Reserved, Live, Unmapping };
    State state = State::Free;
    uint32_t flags = 0;      // the map request's GNTMAP_* (readonly, contains_pte, ...)
    DomId granter = 0;
    grant_ref_t ref = 0;
    Mfn frame{0};
    Mfn l1{0};               // the L1 table and entry the mapping was installed in
    uint16_t index = 0;
    uint32_t next_free = 0;
    bool readonly() const { return flags & GNTMAP_readonly; }
};

// Per-domain limits (xl.cfg max_grant_frames, max_maptrack_frames).
struct GrantLimits {
    uint32_t max_grant_frames = gnt::kDefaultMaxFrames;
    uint32_t max_maptrack_frames = gnt::kDefaultMaxMaptrackFrames;
};

// What the platform gives a grant table. `frames`: frames the domain owns, in
// the order they become table frames (setup_table takes a general and a
// writable type reference on each as it grows, zeroes it, and keeps them
// until the domain's teardown). The limits are cut to the storage given.
struct GrantStorage {
    const Mfn* frames = nullptr;
    uint32_t nr_frames = 0;
    ActiveGrant* active = nullptr;   // nr_frames * gnt::kEntriesPerFrame of them
    MapTrack* maptrack = nullptr;
    uint32_t nr_maptrack = 0;
};

class GrantTable {
public:
    GrantTable(DomId owner, const GrantLimits& limits, const GrantStorage& s);
    GrantTable(const GrantTable&) = delete;
    GrantTable& operator=(const GrantTable&) = delete;

    // The granter's side: table size, shared entries' flags, active entries.
    SpinLock lock;
    // The mapper's side: the maptrack's states and free list. Neither lock
    // is ever held while the other is taken. This one may be taken while a
    // page-table page's lock is held (a refused unmap), never the other way
    // round.
    SpinLock maptrack_lock;

    DomId owner() const { return owner_; }
    uint32_t nr_frames() const { return nr_frames_; }          // table frames in use
    uint32_t max_frames() const { return max_frames_; }
    uint32_t nr_entries() const { return nr_frames_ * gnt::kEntriesPerFrame; }
    uint32_t nr_pinned() const { return nr_pinned_; }           // entries with pins
    uint32_t max_handles() const { return max_handles_; }
    uint32_t handle_limit() const { return handle_limit_; }    // handles ever used: [0, limit)
    Mfn frame(uint32_t i) const { return frames_[i]; }
    ActiveGrant& active(grant_ref_t ref) { return active_[ref]; }
    const ActiveGrant& active(grant_ref_t ref) const { return active_[ref]; }
    MapTrack& map(uint32_t handle) { return maptrack_[handle]; }
    const MapTrack& map(uint32_t handle) const { return maptrack_[handle]; }
    bool dying() const { return dying_; }
    bool frames_held() const { return frames_held_; }

    // The shared entry of ref (< nr_entries()), where the guest wrote it.
    grant_entry_v1_t* entry(Hypervisor& hv, grant_ref_t ref) const;

    // lock held. Grows the table to n frames (no-op when it has them):
    // GNTST_okay or GNTST_general_error (over the limit, or a frame that
    // cannot be typed writable: then nothing changed).
    int16_t grow(Hypervisor& hv, uint32_t n);

    // maptrack_lock held. A Reserved handle, or -1 when the maptrack is full.
    int64_t reserve_handle();
    void free_handle(uint32_t h);

    // Teardown (core/domain_teardown.h): no new pins; the table frames'
    // references dropped unless an entry is still pinned (the frames are
    // then kept, as any frame still referenced).
    void mark_dying() { dying_ = true; }
    void release_frames(Hypervisor& hv);
    // lock held. relinquish_domain's end, frames of the owner kept: true
    // while another domain still pins an entry, and then the last unpin
    // (grant_unpin) hands the domain back to relinquish_domain; false when
    // no pin is left (the caller makes its pass again itself).
    bool keep_until_unpinned();

private:
    DomId owner_;
    const Mfn* frames_;
    ActiveGrant* active_;
    MapTrack* maptrack_;
    uint32_t max_frames_;
    uint32_t max_handles_;
    uint32_t nr_frames_ = 0;
    uint32_t handle_limit_ = 0;
    uint32_t free_head_ = ~0u;
    bool dying_ = false;
    bool frames_held_ = true;
    uint32_t nr_pinned_ = 0;     // entries with pins
    bool relinquish_on_unpin_ = false;

    friend int16_t grant_pin(Hypervisor&, GrantTable&, DomId, grant_ref_t, bool, Mfn&);
    friend bool grant_unpin(Hypervisor&, GrantTable&, grant_ref_t, bool);
};

// Pins ref of `gt` (lock held) for domain `ld`, as Xen's map and copy do:
// the entry must permit access to ld (and not be read-only for a writable
// pin); the first pin sets GTF_reading, the first writable one GTF_writing.
// The frame is the entry's at the first pin and must belong to the granter.
// GNTST_okay with `frame` set, or the GNTST_* refusal, nothing changed.
int16_t grant_pin(Hypervisor& hv, GrantTable& gt, DomId ld, grant_ref_t ref, bool readonly, Mfn& frame);
// The pin's undo (lock held): the last writable pin clears GTF_writing, the
// last pin GTF_reading. True when it was the last pin of a table whose
// owner's teardown kept frames for it (keep_until_unpinned): the caller,
// once the lock is dropped, gives them back (grant_relinquish_owner).
[[nodiscard]] bool grant_unpin(Hypervisor& hv, GrantTable& gt, grant_ref_t ref, bool readonly);
// The rest of a torn-down domain's teardown, once no other domain pins its
// grants: relinquish_domain again, which gives back what is no longer
// referenced and removes the domain when nothing of it is left, as Xen
// frees a dying domain's pages at their last reference.
void grant_relinquish_owner(Hypervisor& hv, const GrantTable& gt);

// HYPERVISOR_grant_table_op(cmd, uop, count): f.arg[0..2]. A batch of
// map, unmap or copy requests is preempted after HvConfig::preempt_budget
// requests with uop and count rewritten, as Xen's continuation.
HcResult do_grant_table_op(Hypervisor& hv, Vcpu& v, HypercallFrame& f);

// One request of each batch sub-op (the unit tests' and the fuzzer's entry
// too): its status field set to a GNTST_* value.
void grant_map_one(Hypervisor& hv, Vcpu& v, gnttab_map_grant_ref_t& op);
// unmap_grant_ref (replace false; new_addr unused) and unmap_and_replace.
void grant_unmap_one(Hypervisor& hv, Vcpu& v, uint64_t host_addr, uint64_t new_addr, grant_handle_t handle,
                     int16_t& status, bool replace);
void grant_copy_one(Hypervisor& hv, Vcpu& v, gnttab_copy_t& op);

// Domain teardown's part (core/domain_teardown.h), before d's tables go:
// the TLBs of d's CPUs are flushed if d maps others' grants, and d's own
// table is marked dying.
void grant_teardown(Hypervisor& hv, Domain& d);
// The rest, once d's tables, and with them the references of its mappings
// of others' grants, are gone: those mappings' pins are released, in an
// unmap's order (references first, then the pin), so that a granter's
// teardown that finds no pin left finds no reference of them either.
// Returns the torn-down granters (a bit per domain id) whose last pin was
// d's: the caller gives them back (grant_relinquish_owner).
[[nodiscard]] uint32_t grant_release_pins(Hypervisor& hv, Domain& d);
static_assert(kMaxDomains <= 32);

} // namespace pvmmu
