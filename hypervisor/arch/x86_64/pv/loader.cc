// Building a PV domain from a guest kernel; see arch/guest.h. The layout of
// its memory (docs/abi.md "Bare-metal guest ABI"): the core's builder maps
// every gpfn g at virt_base + g * 4 KiB (virt_base from XEN_ELFNOTE_VIRT_BASE
// is the builder's physmap); the image's segments go to the gpfns their
// addresses name; then, as Xen's builder orders them, the P2M list
// (mfn_list), start_info, shared_info, the console ring and a boot stack.
// The builder's page tables take gpfns 0.. when the image starts above them
// (pvmmu's own kernels, linked 2 MiB up); a kernel that starts lower (one
// linked at 0, which unmaps or writes VA 0 and 0x1000) gets them where Xen
// puts them: after the console ring, before the stack (<xen/xen.h>, "the
// layout of the start-of-day memory").
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
#include "pv/domain.h"
#include "pv/elf.h"
#include "pv/loader.h"
#include "pv/run.h"

namespace pvmmu::x86 {

namespace {

constexpr uint64_t kStackPages = 4;
constexpr uint64_t kRflagsIf = RFLAGS_IF, kRflagsFixed = RFLAGS_FIXED;

uint64_t pages(uint64_t bytes) { return (bytes + kPageSize - 1) >> kPageShift; }

// Guest bytes at virtual address va of a domain whose memory is the
// physically contiguous run the builder gave it.
uint8_t* guest_bytes(const DomainLayout& l, uint64_t va)
{
    return dmap<uint8_t>(maddr_of(l.first)) + (va - l.physmap.v);
}

// The 32-byte stub of hypercall `nr` (Xen's x86-64 PV hypercall page): SYSCALL
// clobbers RCX and R11, so the stub keeps them; the number goes in EAX. The
// iret stub is jumped to, not called, and never returns: it also pushes RAX,
// completing struct iret_context on the guest's stack (guest_traps.cc).
void write_stub(uint8_t* p, uint32_t nr)
{
    const uint8_t call[] = {0x51,                 // push %rcx
                            0x41, 0x53,           // push %r11
                            0xb8, 0, 0, 0, 0,     // mov $nr, %eax
                            0x0f, 0x05,           // syscall
                            0x41, 0x5b,           // pop %r11
                            0x59,                 // pop %rcx
                            0xc3};                // ret
    const uint8_t iret[] = {0x51,                 // push %rcx
                            0x41, 0x53,           // push %r11
                            0x50,                 // push %rax
                            0xb8, 0, 0, 0, 0,     // mov $nr, %eax
                            0x0f, 0x05,           // syscall
                            0x0f, 0x0b};          // ud2
    memset(p, 0xcc, 32);   // int3 in the padding
    if (nr == __HYPERVISOR_iret) {
        memcpy(p, iret, sizeof(iret));
        memcpy(p + 5, &nr, 4);
    } else {
        memcpy(p, call, sizeof(call));
        memcpy(p + 4, &nr, 4);
    }
}

} // namespace

void write_hypercall_page(uint8_t* page)
{
    for (uint32_t nr = 0; nr < kPageSize / 32; ++nr) write_stub(page + nr * 32, nr);
}

namespace {

// The words of a module's string that are the hypervisor's (main.cc reads
// them, and the unsafe window above): "key=value" or the bare key.
constexpr const char* kHypervisorWords[] = {"frames", "vcpus", "deny", "peer", "unsafe-native-pt", "invariant-check"};

bool hypervisor_word(const char* w, size_t n)
{
    for (const char* k : kHypervisorWords) {
        const size_t l = strlen(k);
        if (n >= l && memcmp(w, k, l) == 0 && (n == l || w[l] == '=')) return true;
    }
    return false;
}

// start_info.cmd_line: the module's words after the kernel's name, in order
// and one space apart, but for the hypervisor's own (issue 14: the kernel
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

// Where the boot structures go (virtual addresses), for a domain of
// nr_frames built from elf: the tables at gpfn 0 when the image starts at
// or above their end, else after the console ring; the P2M list at the
// image's end, start_info, shared_info and the console ring after it, the
// stack last. fits: everything lies within the domain's memory; too_big:
// the memory is more than the physmap's L3 maps from VIRT_BASE's entry on.
struct Layout {
    bool fits = false, too_big = false;
    uint64_t first_pt = 0;
    uint64_t image_lo = 0;   // no segment below: the physmap's base or the tables' end
    uint64_t si = 0, shared = 0, console = 0, stack_top = 0;
};

// The most frames a physmap at base can have: the core builder gives it the
// L3 entries from base's to the slot's last (1 GiB each), so (512 - that
// entry) GiB; Linux's VIRT_BASE, 0xffffffff80000000 (entry 510), 2 GiB.
constexpr uint64_t physmap_max_frames(uint64_t base)
{
    const uint64_t l3i = (base >> 30) & (kEntriesPerTable - 1);
    return (kEntriesPerTable - l3i) * kEntriesPerTable * kEntriesPerTable;
}
static_assert(physmap_max_frames(0xffffffff80000000) == (2ull << 30) >> kPageShift);

Layout boot_layout(const GuestElf& elf, uint64_t nr_frames)
{
    Layout at;
    const uint64_t base = elf.virt_base, npt = builder_table_frames(nr_frames);
    if (nr_frames > physmap_max_frames(base)) {
        at.too_big = true;
        return at;
    }
    // Sizes from base, not end addresses: base + the memory is 2^64, 0, for
    // 2 GiB at Linux's VIRT_BASE. At most 512 GiB, so no sum below wraps.
    const uint64_t size = nr_frames << kPageShift;
    const uint64_t p2m_pages = pages(nr_frames * sizeof(uint64_t));
    const bool tables_first = elf.image_start - base >= (npt << kPageShift);
    // Pages after the image: p2m, si, shared, console, [tables,] stack.
    const uint64_t after = p2m_pages + 3 + (tables_first ? 0 : npt) + kStackPages;
    if (elf.image_start < base || elf.image_end < elf.image_start || elf.image_end - base > size ||
        (size - (elf.image_end - base)) >> kPageShift < after)
        return at;
    at.fits = true;
    at.image_lo = tables_first ? base + (npt << kPageShift) : base;
    at.si = elf.image_end + (p2m_pages << kPageShift);
    at.shared = at.si + kPageSize;
    at.console = at.shared + kPageSize;
    const uint64_t tables = at.console + kPageSize;
    at.first_pt = tables_first ? 0 : (tables - base) >> kPageShift;
    // 0 where the stack ends the last GiB of the address space: the CPU's
    // first push wraps to its top, as it should.
    at.stack_top = tables + ((tables_first ? 0 : npt) + kStackPages) * kPageSize;
    return at;
}

int refuse(const char* why, const char* detail = "")
{
    printk("domain: guest image refused: %s%s%s\n", why, *detail ? ": " : "", detail);
    return -XEN_EINVAL;
}

} // namespace

int guest_load(DomId id, const uint8_t* file, size_t size, uint64_t nr_frames, unsigned nr_vcpus,
               CpuId first_cpu, const char* cmdline, GuestDomain& out)
{
    GuestElf elf;
    if (!guest_elf_parse(file, size, elf)) return refuse(elf.error, elf.detail);
    if (nr_vcpus > XEN_LEGACY_MAX_VCPUS) return refuse("more vCPUs than shared_info has vcpu_info slots");

    const Layout at = boot_layout(elf, nr_frames);
    if (at.too_big) {
        printk("domain: guest image refused: %lu frames past the physmap's L3: at most %lu MiB from VIRT_BASE 0x%lx\n",
               nr_frames, physmap_max_frames(elf.virt_base) >> (20 - kPageShift), elf.virt_base);
        return -XEN_EINVAL;
    }
    if (!at.fits) return refuse("the image and its boot structures do not fit the domain's memory");

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

    bool entry_in = false, hcall_in = !elf.has_hypercall_page;
    for (unsigned i = 0; i < elf.nr_segments; ++i) {
        const GuestSegment& s = elf.seg[i];
        if (s.vaddr < at.image_lo) return refuse("a segment overlaps the domain's page tables");
        if (s.vaddr + s.memsz > elf.image_end) return refuse("a segment past the image's end");   // defensive
        memcpy(guest_bytes(l, s.vaddr), file + s.offset, s.filesz);   // the rest stays zero
        entry_in |= elf.entry >= s.vaddr && elf.entry < s.vaddr + s.memsz;
        hcall_in |= elf.hypercall_page >= s.vaddr && elf.hypercall_page + kPageSize <= s.vaddr + s.memsz;
    }
    if (!entry_in || !hcall_in || (elf.hypercall_page & (kPageSize - 1)))
        return refuse("entry point or hypercall page outside the image");
    // No HYPERCALL_PAGE note: the kernel issues SYSCALL itself, as on Xen.
    if (elf.has_hypercall_page) write_hypercall_page(guest_bytes(l, elf.hypercall_page));

    // The P2M list: the frames are contiguous, but the ABI is the list.
    uint64_t* p2m = reinterpret_cast<uint64_t*>(guest_bytes(l, elf.image_end));
    for (uint64_t g = 0; g < nr_frames; ++g) p2m[g] = l.first.v + g;

    start_info_t& si = *reinterpret_cast<start_info_t*>(guest_bytes(l, si_va));
    static constexpr char kMagic[] = "xen-3.0-x86_64";
    memcpy(si.magic, kMagic, sizeof(kMagic));
    si.nr_pages = nr_frames;
    si.pt_base = l.va(l.first_pt).v;   // the L4 is the first table
    si.nr_pt_frames = l.nr_pt_frames;
    si.mfn_list = elf.image_end;
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
    guest_domain_running();
    printk("domain %u: %lu frames from mfn 0x%lx, virt_base 0x%lx, entry 0x%lx, hypercall page 0x%lx, "
           "start_info 0x%lx, page tables 0x%lx, stack top 0x%lx\n", id, nr_frames, l.first.v, l.physmap.v,
           elf.entry, elf.hypercall_page, si_va, si.pt_base, stack_top);
    return 0;
}

} // namespace pvmmu::x86
