// The portable core (hypervisor/core) on bare metal: the frame table covers
// every machine frame below the top of RAM, MachineMemory is the direct map,
// and BareMetal (mm/platform.h) is the Platform. Frames the boot allocator handed
// out, the image and everything below it belong to the hypervisor (DOMID_XEN);
// usable RAM above is free for domains; the rest (holes, firmware, MMIO) is
// DOMID_IO, so a guest can never map it.
#pragma once

#include "boot/multiboot.h"
#include "core/domain_builder.h"
#include "core/hypervisor.h"
#include "core/invariants.h"

namespace pvmmu::x86 {

struct FrameCounts {
    uint64_t total = 0, xen = 0, free = 0, io = 0;
};

// Allocates the frame table, the M2P and the invariant checker's scratch from
// the boot allocator, closes it, classifies every frame and builds the
// Hypervisor. On the boot CPU, before the APs start.
FrameCounts core_init(const BootInfo& bi);

// nullptr before core_init. Inline: nearly every entry asks.
extern Hypervisor* g_core;
inline Hypervisor* core() { return g_core; }

// The Platform (mm/platform.h) as its own final class, so that the arch
// code's guest copies are direct calls, not through the core's interface:
// bare_metal(), inline in mm/platform.h, where the class is complete.
class BareMetal;
extern unsigned char g_platform_storage[];   // constructed at core_init

// Marks a CPU online in the core (a candidate for type-change flushes).
void core_cpu_online(CpuId cpu);

// The core's own whole-machine invariant check (core/invariants.h).
bool core_check(InvariantReport& report);

// Runs core_check and prints "core invariants: ok (…)", or each violation
// and ends the run with HV_EXIT_FAILURE. Only while no vCPU runs.
void report_core_invariants();

// The lowest run of n free frames: 0, or -ENOMEM.
int core_free_run(uint64_t n, Mfn& first);
// The highest run of n free frames: 0, or -ENOMEM. For what the hypervisor
// keeps per domain (pv/grants.h), so that the domains' own runs, taken from
// the bottom, stay next to each other.
int core_free_run_high(uint64_t n, Mfn& first);

// A domain that never runs, built by the core's domain builder (which
// validates and pins its L4 through the normal paths) from the lowest free
// run of frames: the boot self-test's, and a test domain's peer (`peer=`).
// Its vCPU is pinned to `cpu`. Returns 0 or the builder's errno.
int core_build_idle_domain(DomId id, uint64_t nr_frames, CpuId cpu, Domain& d, DomainLayout& out);

// Boot self-test of the linked core: a small idle domain 1.
int core_build_test_domain(uint64_t nr_frames, DomainLayout& out);

// Frames a test may name as not its own (PVMMUOP_facts): one of the frame
// table (the hypervisor's), and the lowest frame of device or firmware memory.
Mfn core_hypervisor_frame();
Mfn core_io_frame();

} // namespace pvmmu::x86
