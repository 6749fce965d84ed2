// PV guest domains on bare metal (SPEC §5, docs/abi.md "Bare-metal guest
// ABI"): a domain built from a guest kernel (guest_loader.cc), its vCPUs
// entered in ring 3 (guest_run.cc), hypercalls by SYSCALL
// (guest_hypercalls.cc), and the end of a domain (shutdown or crash), which
// ends the run once no domain is left.
#pragma once

#include "arch/traps.h"
#include "core/domain_builder.h"

namespace pvmmu::x86 {

// What the hypervisor keeps per vCPU beyond the core's Vcpu.
struct VcpuArch {
    TrapFrame start{};   // the registers the vCPU starts with (guest_enter)
};

struct GuestDomain {
    Domain dom;
    DomainLayout layout;
    VcpuArch vcpu[kMaxVcpus];
    bool running = false;
};

// Builds domain `id` from the ELF image [file, file + size) with nr_frames
// frames and nr_vcpus vCPUs (on CPUs 0..nr_vcpus-1), loads it and prepares
// vCPU 0 to start at its entry point with start_info in %rsi. 0, or a
// negative Xen errno with the reason printed.
int guest_load(DomId id, const uint8_t* file, size_t size, uint64_t nr_frames, unsigned nr_vcpus,
               GuestDomain& out);

// Sets this CPU up for guests: EFER.SCE and the SYSCALL MSRs. Every CPU.
void syscall_init();

// Runs vCPU `v` (of a domain guest_load built) on this CPU from its start
// registers, on its L4; never returns.
[[noreturn]] void guest_run(Vcpu& v);

// The domain of the vCPU running on this CPU stops with `reason` (SHUTDOWN_*,
// <xen/sched.h>); when it was the last domain running the hypervisor ends
// the run with HV_EXIT_SHUTDOWN + reason (boot_defs.h). This CPU idles.
[[noreturn]] void guest_shutdown(unsigned reason);

// A fault the guest cannot be told about: reported, then a crash shutdown.
[[noreturn]] void guest_crash(const TrapFrame& f, const char* why);

} // namespace pvmmu::x86
