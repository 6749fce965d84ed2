// The machine-wide state of the core: memory, frame table, machine-to-physical
// table, domains, the TLB clock and the platform it runs on. One per machine.
#pragma once

#include "core/domain.h"
#include "core/race_point.h"
#include "core/tlb_clock.h"

namespace pvmmu {

inline constexpr unsigned kMaxDomains = 16;

struct HvConfig {
    // Guest L4 slots reserved to the hypervisor (Xen x86-64 PV: 256..271). Guests
    // may not write them; a table with anything there does not validate.
    unsigned l4_reserved_first = 256;
    unsigned l4_reserved_last = 271;
    // Work units (PTEs) a batch may do before it is preempted and continued:
    // one per request or FLAG_RANGE entry, and one per entry of every table a
    // request validates or devalidates.
    uint32_t preempt_budget = 4096;
};

class Hypervisor {
public:
    Hypervisor(MachineMemory mem, FrameInfo* frames, uint64_t* m2p, Platform& p,
               HvConfig cfg = {})
        : mem_(mem), frames_(frames), m2p_(m2p), platform_(p), cfg_(cfg) {}

    Hypervisor(const Hypervisor&) = delete;
    Hypervisor& operator=(const Hypervisor&) = delete;

    const MachineMemory& mem() const { return mem_; }
    FrameInfo& frame(Mfn m) { return frames_[m.v]; }
    const FrameInfo& frame(Mfn m) const { return frames_[m.v]; }
    uint64_t& m2p(Mfn m) { return m2p_[m.v]; }
    Platform& platform() { return platform_; }
    TlbClock& clock() { return clock_; }
    const HvConfig& config() const { return cfg_; }

    // CPUs that may hold guest translations (the candidates of a type-change flush).
    CpuMask online_cpus() const { return CpuMask{online_.load(std::memory_order_acquire)}; }
    void cpu_online(CpuId c) { online_.fetch_or(uint64_t(1) << c, std::memory_order_acq_rel); }

    // Registers a domain the platform has set up; returns false if the id is taken.
    bool add_domain(Domain& d);
    // Takes d out of the registry (domain_teardown.h): its id is free again.
    // Other CPUs look domains up meanwhile (a map or copy naming d, the
    // last unpin of d's grants): the registry's slots are atomic, and a
    // lookup sees d or nothing. A lookup holds no reference: what a caller
    // reaches through d after it was removed must outlive the removal. It
    // does because a Domain and its GrantTable are never destroyed (the
    // platform's domains are static), domain ids are never reused, and every
    // use of a granter's table after a lookup starts under the table's lock
    // with its dying() check (core/grant_table.h). A platform that destroys
    // domains or reuses ids needs a reference count on Domain first.
    void remove_domain(const Domain& d) { domains_[d.id].store(nullptr, std::memory_order_release); }
    Domain* domain(DomId id) { return id < kMaxDomains ? domains_[id].load(std::memory_order_acquire) : nullptr; }

    // Rounds of the A/D-preserving install loops that lost to a hardware A/D
    // update and went round again (docs/design.md §7's cmpxchg retries), machine-wide.
    void note_install_retry() { install_retries_.fetch_add(1, std::memory_order_relaxed); }
    uint64_t install_retries() const { return install_retries_.load(std::memory_order_relaxed); }

    // Charges `entries` of table work to domain `owner` (Domain::table_work);
    // to nobody when no domain has that id (a frame no domain owns).
    void note_table_work(DomId owner, uint64_t entries)
    {
        if (Domain* d = domain(owner)) d->note_table_work(entries);
    }

    // Tests only (core/race_point.h): install before any CPU runs the core,
    // remove after; nullptr removes it. Only a core built with its race
    // points (race_points_compiled()) ever runs it.
    void set_race_hook(RaceHook h, void* ctx)
    {
        race_hook_ = h;
        race_ctx_ = ctx;
    }
    void run_race_hook(RacePoint p, Mfn m)
    {
        if (race_hook_) [[unlikely]] race_hook_(race_ctx_, p, m);
    }

    bool l4_slot_reserved(unsigned i) const
    {
        return i >= cfg_.l4_reserved_first && i <= cfg_.l4_reserved_last;
    }

private:
    MachineMemory mem_;
    FrameInfo* frames_;
    // In every build of the core, with race points or without, so that code
    // compiled without PVMMU_RACE_POINTS (tests, the simulator) agrees on the layout.
    RaceHook race_hook_ = nullptr;
    void* race_ctx_ = nullptr;
    uint64_t* m2p_;
    Platform& platform_;
    HvConfig cfg_;
    TlbClock clock_;
    std::atomic<uint64_t> online_{0};
    std::atomic<uint64_t> install_retries_{0};
    std::atomic<Domain*> domains_[kMaxDomains] = {};
};

} // namespace pvmmu
