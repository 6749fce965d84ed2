// The domain-wide state of the guest library: start-of-day facts, the feature
// level found once at start-up (docs/design.md §6), the frame allocator, the batching
// configuration, the split page-table locks and the address spaces that page
// faults are dispatched to. One per domain; each vCPU attaches its Cpu to it.
#pragma once

#include <pvmmu/abi.h>   // Xen errno values, hypercall numbers

#include "guest/frame_alloc.h"

namespace pvmmu::guest {

// How PTEs are changed, best first. Dropping a level is the fallback of docs/design.md §6:
// no MMU_FLAG_RANGE_UPDATE -> cmd-2 arrays; no cmd 2 -> cmd 0 with get_and_clear.
enum class MmuLevel : uint8_t { FlagRange = 0, Atomic = 1, Normal = 2 };

// One entry of a page table, named by the table's gpfn and the entry's index.
struct PteRef {
    Gpfn table;
    unsigned index;
};

class FlushPlan;
class AddressSpace;

// Entries [first, first + count) of the L1 `l1`, which map va onwards.
struct PteRange {
    Gpfn l1;
    unsigned first;
    unsigned count;
    Va va;
};

// The hook where a platform supplies its own range updater (an
// arch_change_pte_range): called per L1 with the L1's lock held; it changes the
// range's entries to `prot`, adds every page whose access it reduced to `plan`,
// and returns 0 or a negative Xen errno.
using ChangePteRangeFn = int (*)(Cpu& c, const PteRange& r, unsigned prot, FlushPlan& plan, void* ctx);

// PTEs per mmu_update hypercall. A whole L1 per call was fastest on the sim (see
// docs/guest.md, "Batch size"): the per-request cost is flat, the per-call cost
// (argument copy-in rounds, lookup, lock) is paid once per L1.
inline constexpr unsigned kDefaultBatchPtes = 512;
// Pages flushed one by one (INVLPG) up to this many; beyond, the whole TLB.
// Linux's tlb_single_page_flush_ceiling is 33 for the same trade-off.
inline constexpr unsigned kDefaultFlushThreshold = 32;

struct MmuConfig {
    unsigned batch_ptes = kDefaultBatchPtes;
    // The best level the library may use even when the hypervisor offers more
    // (benchmarks compare the levels side by side on one hypervisor, docs/design.md §7).
    MmuLevel level_cap = MmuLevel::FlagRange;
    unsigned flush_threshold = kDefaultFlushThreshold;
    ChangePteRangeFn change_pte_range = nullptr;   // nullptr: the library's batching
    void* change_pte_range_ctx = nullptr;
    // Each mmu_update goes out as the one entry of a multicall, as Linux on
    // Xen's lazy-MMU batches did before it issued a one-entry batch directly
    // (docs/design.md §7 linux-xen; docs/guest.md "linux-xen and Linux").
    bool multicall = false;
};

class Guest {
public:
    static constexpr unsigned kMaxSpaces = 8;
    static constexpr unsigned kPteLocks = 64;

    // Start of day on the boot vCPU: frame allocator, the boot vCPU's scratch
    // pages, feature detection. 0 or a negative Xen errno.
    [[nodiscard]] int init(Cpu& boot, const BootInfo& bi);
    // Every other vCPU, once init has returned: its scratch pages.
    [[nodiscard]] int attach(Cpu& c);

    // XENVER_get_features, once; a hypervisor without it (-ENOSYS) has none.
    [[nodiscard]] int detect_features(Cpu& c);
    // The level in use: the detected one (lowered by refusals), or the cap if worse.
    MmuLevel level() const
    {
        const uint8_t l = level_.load(std::memory_order_acquire);
        return MmuLevel(l > uint8_t(config.level_cap) ? l : uint8_t(config.level_cap));
    }
    uint32_t features() const { return features_; }
    // The hypervisor refused mmu_update command `cmd` (-ENOSYS, -EPERM): drop to
    // the best level that does without it (cmd 4: Atomic; cmd 2: Normal). true
    // if the current level no longer uses it, so the work can be redone.
    bool refused(Cpu& c, unsigned cmd);

    const BootInfo& boot() const { return boot_; }
    FrameAllocator& frames() { return frames_; }
    MmuConfig config;

    // The physmap: frame numbers and addresses of the domain's memory.
    Mfn mfn(Gpfn g) const { return boot_.p2m ? Mfn{boot_.p2m[g.v]} : Mfn{boot_.first_mfn.v + g.v}; }
    bool gpfn_of(Mfn m, Gpfn& out) const
    {
        if (!boot_.p2m) {
            out = Gpfn{m.v - boot_.first_mfn.v};
            return m.v >= boot_.first_mfn.v && out.v < boot_.nr_frames;
        }
        // The M2P names a gpfn for every frame, ours or not: the P2M confirms.
        // Only frames within the P2M's range are looked up: the M2P may have
        // unmapped holes (device memory) outside the domain's RAM.
        const bool in = m.v >= p2m_min_.v && m.v <= p2m_max_.v && m.v < boot_.m2p_entries;
        out = Gpfn{in ? boot_.m2p[m.v] : boot_.nr_frames};
        return out.v < boot_.nr_frames && boot_.p2m[out.v] == m.v;
    }
    Va va(Gpfn g) const { return boot_.physmap + (g.v << kPageShift); }
    // Whether gpfn g's physmap L1 is known (gpfn 0 is never one: it is the
    // L4 on pvmmu and the sim, a page of the image on Xen).
    bool physmap_mapped(Gpfn g) const
    {
        return g.v < boot_.nr_frames && physmap_l1_[g.v / kEntriesPerTable].v != 0;
    }
    // The physmap's own L1 entry for gpfn g.
    PteRef physmap_pte(Gpfn g) const
    {
        return PteRef{physmap_l1_[g.v / kEntriesPerTable], unsigned(g.v % kEntriesPerTable)};
    }
    Gpfn l4() const { return boot_.l4; }   // the builder's L4

    // The split lock of one page table: every software writer of its entries
    // holds it (docs/design.md §4's per-page lock, on the guest side).
    SpinLock& pte_lock(Gpfn table) { return pte_locks_[table.v % kPteLocks]; }

    // Address spaces page faults are dispatched to.
    [[nodiscard]] bool add_space(AddressSpace* as);
    void remove_space(AddressSpace* as);
    // The library's page-fault handler: true to retry the access.
    bool handle_fault(Cpu& c, const FaultInfo& f);
    // A write fault in the physmap on a frame whose mapping is writable again (a
    // page table freed by pt_free: a raise, never flushed, seed 004) comes from
    // a stale read-only TLB entry: dropped here, on this vCPU. true if so.
    // Bounded: a page fixed kMaxPhysmapFixes times in a row on one vCPU is not
    // stale but read-only somewhere above its L1 entry, and the access fails.
    bool fix_physmap_fault(Cpu& c, const FaultInfo& f);
    static constexpr unsigned kMaxPhysmapFixes = 64;

private:
    // The physmap's L1s, found by a walk from the L4; those the builder did
    // not make (Xen maps only its boot region) made here, filled from the P2M.
    [[nodiscard]] int map_physmap(Cpu& c);
    [[nodiscard]] int physmap_l2(Cpu& c, Va va, Gpfn& l2);
    [[nodiscard]] int fill_physmap_l1(Cpu& c, Gpfn l1, uint64_t first, uint64_t flags);

    BootInfo boot_{};
    Mfn p2m_min_{0}, p2m_max_{0};   // the lowest and highest frame of a scattered P2M
    Gpfn physmap_l1_[FrameAllocator::kMaxFrames / kEntriesPerTable] = {};
    FrameAllocator frames_;
    std::atomic<uint8_t> level_{uint8_t(MmuLevel::Normal)};
    uint32_t features_ = 0;
    SpinLock pte_locks_[kPteLocks];
    std::atomic<AddressSpace*> spaces_[kMaxSpaces] = {};
};

// Addresses of an entry: where the guest reads it (physmap, read-only) and the
// machine address mmu_update names it by.
inline Va pte_va(const Guest& g, PteRef r) { return g.va(r.table) + r.index * sizeof(uint64_t); }
inline Maddr pte_maddr(const Guest& g, PteRef r)
{
    return Maddr{maddr_of(g.mfn(r.table)).v + r.index * sizeof(uint64_t)};
}

} // namespace pvmmu::guest
