// The core on bare metal; see mm/core_glue.h.
#include "mm/core_glue.h"

#include <new>
#include <string.h>

#include "boot/boot_alloc.h"
#include "boot/exit.h"
#include "core/domain_builder.h"
#include "cpu/shootdown.h"
#include "lib/console.h"
#include "mm/direct_map.h"
#include "mm/m2p_map.h"
#include "mm/native_window.h"
#include "mm/platform.h"

#include <pvmmu/abi.h>

namespace pvmmu::x86 {

namespace {

// Static storage constructed at core_init: no global constructors in the image.
alignas(Hypervisor) unsigned char g_hv_storage[sizeof(Hypervisor)];
TallySpan g_scratch{nullptr, 0};
Domain g_test_domain;
Mfn g_hv_frame{0}, g_io_frame{0};

bool usable_frame(const BootInfo& bi, uint64_t a)
{
    for (unsigned i = 0; i < bi.nr_regions; ++i) {
        const MemRegion& r = bi.regions[i];
        if (r.usable() && r.base <= a && a + kPageSize <= r.end()) return true;
    }
    return false;
}

} // namespace

Hypervisor* g_core = nullptr;

alignas(BareMetal) unsigned char g_platform_storage[sizeof(BareMetal)];

FrameCounts core_init(const BootInfo& bi)
{
    FrameCounts n;
    n.total = bi.ram_top >> kPageShift;
    const Maddr frames = boot_alloc(n.total * sizeof(FrameInfo));
    const uint64_t m2p_bytes = ceil_div(n.total * sizeof(uint64_t), kPageSize) * kPageSize;
    const Maddr m2p = boot_alloc(m2p_bytes);
    // As Xen's: a frame no domain was given reads INVALID_M2P_ENTRY (~0UL)
    // there, the page's tail past the last frame too; guests read it in slot 256.
    memset(dmap<uint8_t>(m2p), 0xff, m2p_bytes);
    m2p_map_build(m2p, m2p_bytes);
    const Maddr scratch = boot_alloc(n.total * sizeof(FrameTally));
    boot_alloc_close();
    const uint64_t hv_end = boot_alloc_end();

    FrameInfo* fi = dmap<FrameInfo>(frames);
    for (uint64_t m = 0; m < n.total; ++m) {
        FrameInfo* f = new (&fi[m]) FrameInfo();
        const uint64_t a = m << kPageShift;
        DomId owner = kOwnerIo;
        if (usable_frame(bi, a)) owner = a < hv_end ? kOwnerXen : kOwnerFree;
        f->owner.store(owner, std::memory_order_relaxed);
        if (owner == kOwnerIo && n.io == 0) g_io_frame = Mfn{m};
        (owner == kOwnerXen ? n.xen : owner == kOwnerFree ? n.free : n.io)++;
    }
    g_scratch = TallySpan{dmap<FrameTally>(scratch), n.total};
    g_hv_frame = Mfn{frames.v >> kPageShift};

    auto* platform = new (g_platform_storage) BareMetal();
    // HvConfig's defaults: guest_va_ok (core/guest_va.h) checks guest addresses
    // against the same reserved L4 slots without reading the config.
    g_core = new (g_hv_storage) Hypervisor(MachineMemory{dmap<uint8_t>(Maddr{0}), n.total}, fi,
                                           dmap<uint64_t>(m2p), *platform, HvConfig{});
    shootdown_set_clock(&g_core->clock());
    return n;
}

void core_cpu_online(CpuId cpu)
{
    if (g_core) g_core->cpu_online(cpu);
}

bool core_check(InvariantReport& report) { return check_invariants(*g_core, g_scratch, report); }

int core_free_run(uint64_t n, Mfn& first)
{
    Hypervisor& hv = *g_core;
    uint64_t run = 0;
    for (uint64_t m = 0; m < hv.mem().nr_frames; ++m) {
        run = hv.frame(Mfn{m}).owner.load(std::memory_order_relaxed) == kOwnerFree ? run + 1 : 0;
        if (run == n) {
            first = Mfn{m + 1 - n};
            return 0;
        }
    }
    return -XEN_ENOMEM;
}

int core_free_run_high(uint64_t n, Mfn& first)
{
    Hypervisor& hv = *g_core;
    uint64_t run = 0;
    for (uint64_t m = hv.mem().nr_frames; m-- > 0;) {
        run = hv.frame(Mfn{m}).owner.load(std::memory_order_relaxed) == kOwnerFree ? run + 1 : 0;
        if (n && run == n) {
            first = Mfn{m};
            return 0;
        }
    }
    return -XEN_ENOMEM;
}

int core_build_idle_domain(DomId id, uint64_t nr_frames, CpuId cpu, Domain& d, DomainLayout& out)
{
    DomainSpec spec;
    spec.id = id;
    spec.first_cpu = cpu;
    spec.nr_frames = nr_frames;
    if (int rc = core_free_run(nr_frames, spec.first)) return rc;
    return build_domain(*g_core, d, spec, out);
}

void report_core_invariants()
{
    InvariantReport r;
    if (m2p_map_check()) {
        printk("core invariants: FAILED (the guests' M2P mapping maps more, less or other than the M2P)\n");
        hv_exit(HV_EXIT_FAILURE);
    }
    if (native_window_check()) {
        printk("core invariants: FAILED (an unsafe native window maps more or less than its domain)\n");
        hv_exit(HV_EXIT_FAILURE);
    }
    if (!core_check(r)) {
        for (unsigned i = 0; i < r.kept(); ++i)
            printk("core invariants: VIOLATION: mfn 0x%lx: %s\n", r[i].frame.v, r[i].reason);
        printk("core invariants: FAILED (%lu violations)\n", r.total());
        hv_exit(HV_EXIT_FAILURE);
    }
    printk("core invariants: ok (%lu frames, %lu tables, %lu entries)\n", r.frames, r.tables,
           r.entries);
}

int core_build_test_domain(uint64_t nr_frames, DomainLayout& out)
{
    return core_build_idle_domain(1, nr_frames, 0, g_test_domain, out);
}

Mfn core_hypervisor_frame() { return g_hv_frame; }
Mfn core_io_frame() { return g_io_frame; }

} // namespace pvmmu::x86
