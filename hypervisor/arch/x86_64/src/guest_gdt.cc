// set_gdt (hypercall 2, <xen/arch-x86/xen.h>): a vCPU's own GDT entries,
// below Xen's reserved ones (FIRST_RESERVED_GDT_ENTRY), docs/abi.md §10.
//
// pvmmu copies the guest's descriptors instead of mapping its frames as Xen
// does (Xen types them seg_desc, read-only to the guest while they are a
// GDT; the core has no such frame type): every entry is validated as it is
// copied into a per-CPU buffer of hypervisor frames (percpu.h), so later
// guest writes to its frames change nothing. A vCPU keeps its CPU, so the
// CPU's buffers are the vCPU's.
//
// update_descriptor (hypercall 10) writes one descriptor into a frame of the
// domain, as Xen does, and also into every copy of that entry: each CPU's
// window in use remembers which frames its entries came from. One lock
// orders set_gdt's copy, the reset and update_descriptor's writes, so an
// update is never lost to a set_gdt copying the frame at the same time.
#include <atomic>

#include <pvmmu/abi.h>

#include "arch/core_glue.h"
#include "arch/direct_map.h"
#include "arch/guest.h"
#include "arch/percpu.h"
#include "core/refs.h"
#include "core/spinlock.h"

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

// Where the entries of each CPU's buffers came from (set_gdt's frames and
// the domain that named them); only read or written under g_gdt_lock.
struct GdtSource {
    DomId dom = 0;
    uint64_t mfn[FIRST_RESERVED_GDT_PAGE] = {};
};
GdtSource g_gdt_source[kMaxCpus][2];
// Every domain's set_gdt, update_descriptor and vCPU start take it, so it is
// fair: a domain that keeps it busy delays another's CPU by at most one hold
// per CPU, never for ever. (A lock per domain would not delay it at all.)
TicketLock g_gdt_lock;

struct GdtLockHeld {
    GdtLockHeld() { g_gdt_lock.lock(core()->platform()); }
    ~GdtLockHeld() { g_gdt_lock.unlock(); }
    GdtLockHeld(const GdtLockHeld&) = delete;
    GdtLockHeld& operator=(const GdtLockHeld&) = delete;
};

// What a buffer holds for descriptor e: the accessed bit preset, as the CPU
// would write it into the read-only buffer.
constexpr uint64_t buffered(uint64_t e) { return e ? e | kAccessed : 0; }

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
    GdtSource& src_of = g_gdt_source[c.id][w];
    src_of.dom = d.id;
    for (uint32_t page = 0; page * kEntriesPerPage < entries; ++page) {
        const Mfn m{frames[page]};
        src_of.mfn[page] = m.v;
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
            buf[page * kEntriesPerPage + i] = buffered(e);
        }
        put_page(hv, m);
        if (rc) return rc;
    }
    return 0;
}

// Entry `index` of frame m, now e, into every window in use that took its
// entries from m for domain d. The store is one aligned 8-byte write: a CPU
// loading that selector meanwhile reads the old descriptor or the new one.
void update_copies(DomId d, Mfn m, unsigned index, uint64_t e)
{
    for (unsigned cpu = 0; cpu < g_nr_cpus; ++cpu) {
        const PerCpu& c = g_cpus[cpu];
        const unsigned w = c.gdt_active;
        const GdtSource& s = g_gdt_source[cpu][w];
        if (s.dom != d) continue;
        uint64_t* buf = dmap<uint64_t>(Maddr{c.gdt_buf[w]});
        for (uint32_t page = 0; page * kEntriesPerPage + index < c.gdt_ents[w]; ++page)
            if (s.mfn[page] == m.v)
                std::atomic_ref<uint64_t>(buf[page * kEntriesPerPage + index]).store(buffered(e), std::memory_order_relaxed);
    }
}

} // namespace

// set_gdt(frame_list, entries): frame_list names ceil(entries / 512) machine
// frames of the domain; their first `entries` descriptors become the calling
// vCPU's GDT entries 0 .. entries - 1, all later ones (below the reserved
// ones) null. Nothing changes on error.
long do_set_gdt(Vcpu& v, HypercallFrame& f)
{
    const uint32_t entries = uint32_t(f.arg[1]);   // an unsigned int in Xen's prototype
    if (entries > FIRST_RESERVED_GDT_ENTRY) return -XEN_EINVAL;
    xen_pfn_t frames[FIRST_RESERVED_GDT_PAGE];
    const uint32_t nr = (entries + kEntriesPerPage - 1) / kEntriesPerPage;
    if (core()->platform().copy_from_guest(v, frames, Vaddr{f.arg[0]}, nr * sizeof(xen_pfn_t))) return -XEN_EFAULT;
    PerCpu& c = this_cpu();
    const GdtLockHeld held;
    const unsigned w = c.gdt_active ^ 1;   // not in use: free to fill
    c.gdt_ents[w] = entries > c.gdt_ents[w] ? entries : c.gdt_ents[w];   // what fill may write
    if (const long rc = fill(c, w, *v.domain, frames, entries)) return rc;
    trim(c, w, entries);
    load_window(c, w);
    return 0;
}

// update_descriptor(maddr, desc): the 8 bytes at machine address maddr (a
// frame of the domain) become desc, and so does every GDT entry copied from
// them. Xen's order and errnos: alignment and the descriptor first, then
// the frame (not the caller's, or beyond memory: -EINVAL), then a type
// reference for the write. pvmmu's GDT frames have no descriptor type
// (they are copied), so that is always Xen's other case, a writable one:
// a page table in use is -EINVAL, and while the reference is held the frame
// cannot become one. Nothing changes on error.
long do_update_descriptor(Vcpu& v, HypercallFrame& f)
{
    const uint64_t maddr = f.arg[0], desc = f.arg[1];
    if ((maddr & 7) || !guest_desc_ok(desc)) return -XEN_EINVAL;
    Hypervisor& hv = *core();
    const Mfn m{maddr >> kPageShift};
    const DomId d = v.domain->id;
    if (get_page(hv, m, d)) return -XEN_EINVAL;
    if (get_writable_type(hv, m)) {
        put_page(hv, m);
        return -XEN_EINVAL;
    }
    const unsigned index = unsigned(maddr & (kPageSize - 1)) / 8;
    {
        const GdtLockHeld held;
        uint64_t* dst = static_cast<uint64_t*>(hv.mem().frame(m)) + index;
        std::atomic_ref<uint64_t>(*dst).store(desc, std::memory_order_relaxed);
        update_copies(d, m, index, desc);
    }
    put_page_and_type(hv, m);
    return 0;
}

void guest_gdt_reset()
{
    PerCpu& c = this_cpu();
    const GdtLockHeld held;
    trim(c, 0, 0);
    trim(c, 1, 0);
    load_window(c, 0);
}

} // namespace pvmmu::x86
