// Domains and their vCPUs as the core knows them.
#pragma once

#include "core/call_counters.h"
#include "core/frame.h"
#include "core/policy.h"

namespace pvmmu {

inline constexpr unsigned kMaxVcpus = kMaxCpus;

struct Domain;
class DomainEvents;
class GrantTable;

struct Vcpu {
    Domain* domain = nullptr;
    unsigned id = 0;          // vCPU number within the domain
    CpuId cpu = 0;            // the physical CPU it runs on (pinned)
    bool online = false;
    Mfn guest_table{0};       // L4 of the kernel address space (holds an L4 type ref)
    Mfn guest_table_user{0};  // L4 of the user address space, 0 = none
    bool has_table = false;
    bool has_user_table = false;
    void* platform_data = nullptr;   // the platform's own per-vCPU state
    CallCounters calls;              // what it asked for (core/call_counters.h)
};

struct Domain {
    DomId id = 0;
    unsigned nr_vcpus = 0;
    Vcpu vcpus[kMaxVcpus];
    Policy policy;
    uint64_t nr_frames = 0;   // frames owned
    // Frames of the domain the hypervisor itself writes (bare metal: its
    // shared_info and console ring, and each vCPU's registered vcpu_info).
    // Each holds a general and a writable type reference (refs.h
    // hold_writable), so none can become a page table while the hypervisor
    // may write it — as Xen holds shared_info and vcpu_info.
    static constexpr unsigned kMaxHeld = 2 + kMaxVcpus;
    Mfn held[kMaxHeld] = {};
    unsigned nr_held = 0;
    // Its event channels, timers and block/poll state (core/events.h),
    // the platform's; null: every event hypercall is -ENOSYS.
    DomainEvents* events = nullptr;
    // Its grant table and maptrack (core/grant_table.h), the platform's;
    // null: every grant table sub-op is -ENOSYS.
    GrantTable* grants = nullptr;

    // The physical CPUs of the vCPUs named in a bitmap over this domain's vCPUs.
    CpuMask cpus_of(uint64_t vcpu_bits) const
    {
        CpuMask m;
        for (unsigned i = 0; i < nr_vcpus; ++i)
            if ((vcpu_bits >> i) & 1) m.set(vcpus[i].cpu);
        return m;
    }
    CpuMask all_cpus() const { return cpus_of(~0ull); }
    uint64_t vcpu_bits_valid() const { return nr_vcpus >= 64 ? ~0ull : (1ull << nr_vcpus) - 1; }

    // Entries of this domain's page tables validated or devalidated
    // (pagetable.cc), counted as they are done. run_batch and multicall charge
    // a batch the growth of its own domain's count while it ran, on top of the
    // request's own units. Per domain, so that no domain
    // can make another's batches yield; the domain's own other vCPUs are
    // counted too and can only make its batch yield sooner, never later (each
    // round still completes a request).
    void note_table_work(uint64_t entries) { table_work_.fetch_add(entries, std::memory_order_relaxed); }
    uint64_t table_work() const { return table_work_.load(std::memory_order_relaxed); }
    // Through the two functions above only; public so that Domain stays a
    // standard-layout type (the bare-metal GuestDomain starts with it).
    std::atomic<uint64_t> table_work_{0};
};

} // namespace pvmmu
