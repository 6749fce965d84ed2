// Building a PV domain from a guest kernel; see pv/loader.h. The image is
// read (pv/elf.h) and placed (pv/place.h: where each part of
// it and of the boot structures goes) with every check done before the
// domain's frames are taken; then the core's builder maps them and the image,
// start_info and the rest are written, only inside them.
#include <string.h>

#include <pvmmu/abi.h>

#include "boot/multiboot.h"
#include "core/domain_builder.h"
#include "core/refs.h"
#include "cpu/cpu_bits.h"
#include "cpu/selectors.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "mm/native_window.h"
#include "pv/console.h"
#include "pv/events.h"
#include "pv/domain.h"
#include "pv/elf.h"
#include "pv/loader.h"
#include "pv/place.h"
#include "pv/run.h"

namespace pvmmu::x86 {

namespace {

constexpr uint64_t kRflagsIf = RFLAGS_IF, kRflagsFixed = RFLAGS_FIXED;

// Guest bytes at virtual address va of a domain whose memory is the
// physically contiguous run the builder gave it.
uint8_t* guest_bytes(const DomainLayout& l, uint64_t va)
{
    return dmap<uint8_t>(maddr_of(l.first)) + (va - l.physmap.v);
}

// The domain's memory as guest_write_image writes it: only its own bytes.
struct DirectGuestMemory {
    const DomainLayout& l;
    uint8_t* bytes(uint64_t va, uint64_t n) const
    {
        return range_within(va, n, l.physmap.v, l.nr_frames << kPageShift) ? guest_bytes(l, va) : nullptr;
    }
};

// The words of a module's string that are the hypervisor's (main.cc reads
// them, and the unsafe window above): "key=value" or the bare key.
constexpr const char* kHypervisorWords[] = {"frames", "vcpus", "deny", "peer", "unsafe-native-pt", "invariant-check",
                                             "max_grant_frames", "max_maptrack_frames"};

bool hypervisor_word(const char* w, size_t n)
{
    for (const char* k : kHypervisorWords) {
        const size_t l = strlen(k);
        if (n >= l && memcmp(w, k, l) == 0 && (n == l || w[l] == '=')) return true;
    }
    return false;
}

// start_info.cmd_line: the module's words after the kernel's name, in order
// and one space apart, but for the hypervisor's own (the kernel
// sees what Xen would pass it). Cut at the field's size, NUL-terminated.
void guest_cmdline(const char* words, int8_t (&out)[MAX_GUEST_CMDLINE])
{
    size_t o = 0;
    for (const char* w = words; *w;) {
        while (*w == ' ') ++w;
        size_t n = 0;
        while (w[n] && w[n] != ' ') ++n;
        if (n && !hypervisor_word(w, n))
            for (size_t i = (o ? 0 : 1); i <= n && o + 1 < sizeof(out); ++i) out[o++] = int8_t(i ? w[i - 1] : ' ');
        w += n;
    }
    out[o] = 0;
}

// "domain N: guest image refused: why[: detail]", before anything is
// allocated or written; main.cc then prints "pvmmu: FAILED: domain N was not
// built", the line pvmmu-run reads.
int refuse(DomId id, const char* why, const char* detail = "")
{
    printk("domain %u: guest image refused: %s%s%s\n", id, why, *detail ? ": " : "", detail);
    return -XEN_EINVAL;
}

} // namespace

int guest_load(DomId id, const uint8_t* file, size_t size, const uint8_t* module, size_t module_len,
               uint64_t nr_frames, unsigned nr_vcpus, CpuId first_cpu, const char* cmdline, GuestDomain& out)
{
    GuestElf elf;
    if (!guest_elf_parse(file, size, elf)) return refuse(id, elf.error, elf.detail);
    if (nr_vcpus > XEN_LEGACY_MAX_VCPUS) return refuse(id, "more vCPUs than shared_info has vcpu_info slots");

    GuestPlacement at;
    if (!guest_place(elf, nr_frames, at, module_len)) return refuse(id, at.error, at.detail);

    DomainSpec spec;
    spec.id = id;
    spec.nr_vcpus = nr_vcpus;
    spec.first_cpu = first_cpu;
    spec.nr_frames = nr_frames;
    spec.physmap = Vaddr{elf.virt_base};
    spec.first_pt = at.first_pt;
    while (*cmdline && *cmdline != ' ') ++cmdline;   // the kernel's own name
    while (*cmdline == ' ') ++cmdline;
    // Benchmarking only: the module's words must ask for it by name (never the
    // hypervisor's command line, nor the kernel's file name), and the console
    // says so loudly.
    const bool unsafe_native = cmdline_word(cmdline, "unsafe-native-pt");
    if (int rc = unsafe_native ? native_window_build(id, nr_frames, spec.first)
                               : core_free_run(nr_frames, spec.first))
        return rc;
    if (int rc = build_domain(*core(), out.dom, spec, out.layout)) {
        printk("domain: the core's builder refused domain %u: error %d\n", id, rc);
        return rc;
    }
    const DomainLayout& l = out.layout;
    const uint64_t si_va = at.si, shared_va = at.shared, console_va = at.console, stack_top = at.stack_top;

    DirectGuestMemory mem{l};
    if (!guest_write_image(elf, at, file, l.first.v, mem, module))
        return refuse(id, "a write outside the domain (a loader bug)");

    start_info_t& si = *reinterpret_cast<start_info_t*>(guest_bytes(l, si_va));
    static constexpr char kMagic[] = "xen-3.0-x86_64";
    memcpy(si.magic, kMagic, sizeof(kMagic));
    si.nr_pages = nr_frames;
    si.pt_base = l.va(l.first_pt).v;   // the L4 is the first table
    si.nr_pt_frames = l.nr_pt_frames;
    si.mfn_list = at.p2m;
    // The initial module, mapped like every frame of the domain: its virtual
    // address, or its PFN where the kernel asks for one
    // (XEN_ELFNOTE_MOD_START_PFN), as Xen's builders give it (<xen/xen.h>,
    // start_info.mod_start and SIF_MOD_START_PFN).
    if (at.module_len) {
        si.mod_len = at.module_len;
        si.mod_start = elf.mod_start_pfn ? (at.module - l.physmap.v) >> kPageShift : at.module;
        if (elf.mod_start_pfn) si.flags |= SIF_MOD_START_PFN;
    }
    guest_cmdline(cmdline, si.cmd_line);
    // shared_info and the console ring are the guest's own frames, already
    // mapped (Xen's shared_info is a hypervisor frame the guest maps itself).
    // The hypervisor writes them (vcpu_info[].arch.cr2 before a page-fault
    // bounce, the ring's out_cons), so it holds each writable: the guest can
    // never make one a page table (Domain::held).
    const Mfn shared_mfn = l.mfn((shared_va - l.physmap.v) >> kPageShift);
    const Mfn console_mfn = l.mfn((console_va - l.physmap.v) >> kPageShift);
    if (int rc = hold_writable(*core(), out.dom, shared_mfn)) return rc;
    if (int rc = hold_writable(*core(), out.dom, console_mfn)) return rc;
    out.shared = reinterpret_cast<shared_info_t*>(guest_bytes(l, shared_va));
    out.console = reinterpret_cast<xencons_interface*>(guest_bytes(l, console_va));
    si.shared_info = maddr_of(shared_mfn).v;
    si.console.domU.mfn = console_mfn.v;
    si.console.domU.evtchn = kConsolePort;
    if (int rc = guest_events_init(out)) {
        (void)refuse(id, "the console's event channel could not be bound");
        return rc;
    }

    for (unsigned i = 0; i < nr_vcpus; ++i) out.dom.vcpus[i].platform_data = &out.vcpu[i];
    TrapFrame& f = out.vcpu[0].start;
    f = TrapFrame{};
    f.rip = elf.entry;
    f.cs = HV_SEL_GUEST_CS64;
    f.rflags = kRflagsIf | kRflagsFixed;
    f.rsp = stack_top;
    f.ss = HV_SEL_GUEST_DS;
    f.rsi = si_va;
    out.vcpu[0].state.store(VcpuState::Initialised, std::memory_order_release);
    // Only vCPU 0 starts on the boot L4, as Xen builds a PV domain: the others
    // get theirs from VCPUOP_initialise. A reference held for them would keep
    // the boot L4 a page table after the guest leaves and unpins it, and
    // Linux's writable mapping of it then would fail (its
    // xen_setup_kernel_pagetable).
    for (unsigned i = 1; i < nr_vcpus; ++i) {
        Vcpu& v = out.dom.vcpus[i];
        if (!v.has_table) continue;
        put_page_and_type(*core(), v.guest_table);
        v.has_table = false;
    }
    guest_domain_running();
    printk("domain %u: %lu frames from mfn 0x%lx, virt_base 0x%lx, entry 0x%lx, hypercall page 0x%lx, "
           "start_info 0x%lx, page tables 0x%lx, stack top 0x%lx\n", id, nr_frames, l.first.v, l.physmap.v,
           elf.entry, elf.hypercall_page, si_va, si.pt_base, stack_top);
    if (at.module_len)
        printk("domain %u: initial module at 0x%lx (pfn 0x%lx), %lu bytes; start_info mod_start 0x%lx%s\n", id,
               at.module, (at.module - l.physmap.v) >> kPageShift, at.module_len, si.mod_start,
               elf.mod_start_pfn ? " (SIF_MOD_START_PFN)" : "");
    return 0;
}

} // namespace pvmmu::x86
