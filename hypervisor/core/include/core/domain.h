// Domains and their vCPUs as the core knows them.
#pragma once

#include "core/frame.h"
#include "core/policy.h"

namespace pvmmu {

inline constexpr unsigned kMaxVcpus = kMaxCpus;

struct Domain;

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
};

struct Domain {
    DomId id = 0;
    unsigned nr_vcpus = 0;
    Vcpu vcpus[kMaxVcpus];
    Policy policy;
    uint64_t nr_frames = 0;   // frames owned
    // Frames of the domain the hypervisor itself writes (bare metal: its
    // shared_info and console ring). Each holds a general and a writable type
    // reference (refs.h hold_writable), so none can become a page table while
    // the hypervisor may write it — as Xen holds shared_info and vcpu_info.
    static constexpr unsigned kMaxHeld = 4;
    Mfn held[kMaxHeld] = {};
    unsigned nr_held = 0;

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
};

} // namespace pvmmu
