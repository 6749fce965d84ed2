// set_gdt (hypercall 2, <xen/arch-x86/xen.h>): a vCPU's own GDT entries,
// below Xen's reserved ones (FIRST_RESERVED_GDT_ENTRY), docs/abi.md §10.
//
// pvmmu copies the guest's descriptors instead of mapping its frames as Xen
// does (Xen types them seg_desc, read-only to the guest while they are a
// GDT; the core has no such frame type): every entry is validated as it is
// copied into a per-CPU buffer of hypervisor frames (percpu.h), so later
// guest writes to its frames change nothing. A vCPU keeps its CPU, so the
// CPU's buffers are the vCPU's.
#include <atomic>

#include <pvmmu/abi.h>

#include "arch/core_glue.h"
#include "arch/direct_map.h"
#include "arch/guest.h"
#include "arch/percpu.h"
#include "core/refs.h"

namespace pvmmu::x86 {

namespace {

constexpr unsigned kEntriesPerPage = kPageSize / 8;

// Descriptor bits ("Segment Descriptors", SDM Vol. 3A): accessed, code, S
// (code or data), DPL (46:45), L (64-bit code), D/B.
constexpr uint64_t kAccessed = 1ull << 40, kCode = 1ull << 43, kS = 1ull << 44, kL = 1ull << 53, kDb = 1ull << 54;
constexpr unsigned kDplShift = 45;

// The entries a guest may have (present or not): the null descriptor, and
// code or data segments of DPL 3 — the ring a 64-bit PV kernel runs in.
// Code must be 64-bit (L = 1, D = 0): a compatibility-mode segment would
// reach SYSCALL's 32-bit entry, which pvmmu keeps shut (descriptors.cc);
// data must have L = 0. System descriptors (LDT, TSS, call gates) never.
constexpr bool guest_desc_ok(uint64_t d)
{
    if (d == 0) return true;
    if (!(d & kS) || ((d >> kDplShift) & 3) != 3) return false;
    return (d & kCode) ? (d & kL) && !(d & kDb) : !(d & kL);
}
static_assert(guest_desc_ok(0));
static_assert(guest_desc_ok(seg_desc(Seg::Code64, 3)) && guest_desc_ok(seg_desc(Seg::Data, 3)));
static_assert(!guest_desc_ok(seg_desc(Seg::Code64, 0)) && !guest_desc_ok(seg_desc(Seg::Data, 1)));
static_assert(!guest_desc_ok(seg_desc(Seg::Code32, 3)));                 // compatibility mode
static_assert(!guest_desc_ok(tss_desc(0x1000, 103).lo | (3ull << kDplShift)));   // a TSS, even DPL 3
static_assert(!guest_desc_ok(0x0000ec0000000000ull));                    // a 64-bit call gate, DPL 3
static_assert(!guest_desc_ok(seg_desc(Seg::Data, 3) | kL));

void load_window(PerCpu& c, unsigned w)
{
    const DescriptorPointer p{HV_GDT_LIMIT, c.area + area::kGdtWindow[w]};
    asm volatile("lgdt %0" : : "m"(p) : "memory");
    c.gdt_active = w;
}

// Buffer w of c holds `n` entries from now on: the ones after them, up to
// what it held before, become null.
void trim(PerCpu& c, unsigned w, uint32_t n)
{
    uint64_t* buf = dmap<uint64_t>(Maddr{c.gdt_buf[w]});
    for (uint32_t i = n; i < c.gdt_ents[w]; ++i) buf[i] = 0;
    c.gdt_ents[w] = n;
}

// Copies and validates `frames` into buffer w; 0 or the errno.
long fill(PerCpu& c, unsigned w, const Domain& d, const xen_pfn_t* frames, uint32_t entries)
{
    uint64_t* buf = dmap<uint64_t>(Maddr{c.gdt_buf[w]});
    Hypervisor& hv = *core();
    for (uint32_t page = 0; page * kEntriesPerPage < entries; ++page) {
        const Mfn m{frames[page]};
        // A general reference for the copy: the frame stays the domain's.
        if (int rc = get_page(hv, m, d.id)) return rc;
        // A page table cannot be a GDT, as in Xen (its descriptor type and a
        // table type exclude each other).
        const FrameInfo& fi = hv.frame(m);
        const uint64_t x = fi.type_info.load(std::memory_order_acquire);
        if (is_table_type(ti::type(x)) && ti::count(x)) {
            put_page(hv, m);
            return -XEN_EINVAL;
        }
        const uint64_t* src = static_cast<const uint64_t*>(hv.mem().frame(m));
        const uint32_t n = entries - page * kEntriesPerPage < kEntriesPerPage ? entries - page * kEntriesPerPage
                                                                              : kEntriesPerPage;
        long rc = 0;
        for (uint32_t i = 0; i < n && !rc; ++i) {
            // Read once: another vCPU may write the frame meanwhile.
            const uint64_t e = std::atomic_ref<const uint64_t>(src[i]).load(std::memory_order_relaxed);
            if (!guest_desc_ok(e)) rc = -XEN_EINVAL;
            // The accessed bit preset: the CPU would write it into the read-only buffer.
            buf[page * kEntriesPerPage + i] = e ? e | kAccessed : 0;
        }
        put_page(hv, m);
        if (rc) return rc;
    }
    return 0;
}

} // namespace

// set_gdt(frame_list, entries): frame_list names ceil(entries / 512) machine
// frames of the domain; their first `entries` descriptors become the calling
// vCPU's GDT entries 0 .. entries - 1, all later ones (below the reserved
// ones) null. Nothing changes on error.
long do_set_gdt(Vcpu& v, TrapFrame& f)
{
    const uint32_t entries = uint32_t(f.rsi);   // an unsigned int in Xen's prototype
    if (entries > FIRST_RESERVED_GDT_ENTRY) return -XEN_EINVAL;
    xen_pfn_t frames[FIRST_RESERVED_GDT_PAGE];
    const uint32_t nr = (entries + kEntriesPerPage - 1) / kEntriesPerPage;
    if (core()->platform().copy_from_guest(v, frames, Vaddr{f.rdi}, nr * sizeof(xen_pfn_t))) return -XEN_EFAULT;
    PerCpu& c = this_cpu();
    const unsigned w = c.gdt_active ^ 1;   // not in use: free to fill
    c.gdt_ents[w] = entries > c.gdt_ents[w] ? entries : c.gdt_ents[w];   // what fill may write
    if (const long rc = fill(c, w, *v.domain, frames, entries)) return rc;
    trim(c, w, entries);
    load_window(c, w);
    return 0;
}

void guest_gdt_reset()
{
    PerCpu& c = this_cpu();
    trim(c, 0, 0);
    trim(c, 1, 0);
    load_window(c, 0);
}

} // namespace pvmmu::x86
