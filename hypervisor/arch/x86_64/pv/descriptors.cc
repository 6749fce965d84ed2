// set_gdt (hypercall 2, <xen/arch-x86/xen.h>): a vCPU's own GDT entries,
// below Xen's reserved ones (FIRST_RESERVED_GDT_ENTRY), docs/abi.md §10.
//
// pvmmu copies the guest's descriptors instead of mapping its frames as Xen
// does (Xen types them seg_desc, read-only to the guest while they are a
// GDT; the core has no such frame type): every entry is validated as it is
// copied into a per-CPU buffer of hypervisor frames (cpu/percpu.h), so later
// guest writes to its frames change nothing. A vCPU keeps its CPU, so the
// CPU's buffers are the vCPU's.
//
// MMUEXT_SET_LDT (core/mmuext.cc, then BareMetal::set_ldt) makes a vCPU's
// LDT the same way: the descriptors at the guest's linear address, checked
// by the same rule as the GDT's (guest_desc_ok), are copied into the CPU's
// LDT window not in use, whose LDT descriptor LDTR then names. Xen maps the
// guest's frames instead, lazily on a #PF in its LDT area; pvmmu copies at
// SET_LDT time, so a frame that cannot be an LDT page is refused there
// (docs/abi.md §11). Nothing but the copy is ever reachable, so a frame that
// is later made writable or freed changes no LDT: no stale mapping exists.
//
// update_descriptor (hypercall 10) writes one descriptor into a frame of the
// domain, as Xen does, and also into every copy of that entry: each CPU's
// windows in use (GDT and LDT) remember which frames their entries came
// from. The domain's desc_lock (pv/domain.h) orders set_gdt's and
// SET_LDT's copies, the reset and update_descriptor's writes, so an update
// is never lost to a copy of the frame made at the same time.
#include <atomic>

#include <pvmmu/abi.h>

#include "core/descriptor_rules.h"
#include "core/pagetable.h"
#include "core/refs.h"
#include "core/spinlock.h"
#include "cpu/percpu.h"
#include "lib/console.h"
#include "mm/core_glue.h"
#include "mm/direct_map.h"
#include "pv/descriptors.h"
#include "pv/domain.h"
#include "pv/hypercall.h"

namespace pvmmu::x86 {

namespace {

using desc_bit::kAccessed;

// Where the entries of each CPU's buffers came from: the domain whose vCPU
// runs there (`owner`), and the frames of its set_gdt and SET_LDT, by
// window. A CPU writes its own; another CPU reads them in update_copies.
// `owner` changes only under the lock of the domain it names before or
// after the change (guest_gdt_reset), the frames only under the owner's:
// so a reader holding domain d's lock that sees owner == d reads d's
// frames, and its writes land in d's copies only.
struct DescSource {
    std::atomic<GuestDomain*> owner{nullptr};
    uint64_t gdt_mfn[2][FIRST_RESERVED_GDT_PAGE] = {};
    uint64_t ldt_mfn[2][area::kLdtPages] = {};
};
DescSource g_source[kMaxCpus];

class DescLockHeld {
public:
    explicit DescLockHeld(GuestDomain& g) : lock_(g.desc_lock) { lock_.lock(core()->platform()); }
    ~DescLockHeld() { lock_.unlock(); }
    DescLockHeld(const DescLockHeld&) = delete;
    DescLockHeld& operator=(const DescLockHeld&) = delete;

private:
    TicketLock& lock_;
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

// The first `n` descriptors of frame m (the domain's) into dst, validated:
// 0 or the errno. The frame's type is checked at the time of the copy
// (descriptor_frame_check); a writable mapping made after it cannot reach
// the copy.
long copy_page(Hypervisor& hv, const Domain& d, Mfn m, uint64_t* dst, uint32_t n, bool ldt)
{
    // A general reference for the copy: the frame stays the domain's.
    if (int rc = get_page(hv, m, d.id)) return rc;
    const uint64_t x = hv.frame(m).type_info.load(std::memory_order_acquire);
    if (const long rc = descriptor_frame_check(ti::type(x), ti::count(x), ldt)) {
        put_page(hv, m);
        return rc;
    }
    uint64_t* src = static_cast<uint64_t*>(hv.mem().frame(m));
    long rc = 0;
    for (uint32_t i = 0; i < n && !rc; ++i) {
        // Read once: another vCPU may write the frame meanwhile.
        const uint64_t e = std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed);
        uint64_t fixed_e = e;
        if (!guest_desc_fix(fixed_e)) rc = -XEN_EINVAL;
        dst[i] = buffered(fixed_e);
    }
    // Xen fixes the frame itself (a DPL raised), as the guest reads it
    // back; only once all were taken (nothing changes on error), and a
    // write of the guest's meanwhile wins (the copy is what counts). The
    // write holds a writable type reference, as update_descriptor's does:
    // the frame may have become a page table since the check above (another
    // vCPU's pin), and a validated table must never change behind its
    // validation; then the frame keeps what the guest wrote.
    if (!rc && !get_writable_type(hv, m)) {
        for (uint32_t i = 0; i < n; ++i) {
            uint64_t e = std::atomic_ref<uint64_t>(src[i]).load(std::memory_order_relaxed);
            uint64_t fixed_e = e;
            if (guest_desc_fix(fixed_e) && fixed_e != e)
                std::atomic_ref<uint64_t>(src[i]).compare_exchange_strong(e, fixed_e, std::memory_order_relaxed);
        }
        put_page_type(hv, m);
    }
    put_page(hv, m);
    return rc;
}

// Copies and validates `frames` into GDT buffer w; 0 or the errno.
long fill(PerCpu& c, unsigned w, const Domain& d, const xen_pfn_t* frames, uint32_t entries)
{
    uint64_t* buf = dmap<uint64_t>(Maddr{c.gdt_buf[w]});
    Hypervisor& hv = *core();
    for (uint32_t page = 0; page * kDescriptorsPerPage < entries; ++page) {
        const Mfn m{frames[page]};
        g_source[c.id].gdt_mfn[w][page] = m.v;
        if (const long rc = copy_page(hv, d, m, buf + size_t{page} * kDescriptorsPerPage,
                                      descriptors_on_page(entries, page), false))
            return rc;
    }
    return 0;
}

// The frame that maps guest address va (page-aligned) in v's address space,
// as the guest's own tables say: the walk update_va_mapping does, then the
// L1 entry. -EFAULT where nothing of the domain's is mapped.
long guest_frame(Hypervisor& hv, const Vcpu& v, uint64_t va, Mfn& out)
{
    if (!guest_va_ok(va)) return -XEN_EFAULT;
    const Mfn l1 = walk_to_l1(hv, v, Vaddr{va});
    if (!hv.mem().valid(l1) || hv.frame(l1).owner.load(std::memory_order_acquire) != v.domain->id)
        return -XEN_EFAULT;
    const Pte e{load_entry(hv.mem().table(l1) + table_index(Vaddr{va}, Level::L1))};
    if (!e.present() || !hv.mem().valid(e.mfn())) return -XEN_EFAULT;
    out = e.mfn();
    return 0;
}

// Copies and validates the LDT at guest address base into LDT buffer w.
long fill_ldt(CpuLdt& l, unsigned w, const Vcpu& v, uint64_t base, uint32_t entries)
{
    uint64_t* buf = dmap<uint64_t>(Maddr{l.buf[w]});
    Hypervisor& hv = *core();
    DescSource& src = g_source[this_cpu().id];
    for (uint32_t page = 0; page * kDescriptorsPerPage < entries; ++page) {
        Mfn m{0};
        if (const long rc = guest_frame(hv, v, base + page * kPageSize, m)) return rc;
        src.ldt_mfn[w][page] = m.v;
        if (const long rc = copy_page(hv, *v.domain, m, buf + size_t{page} * kDescriptorsPerPage,
                                      descriptors_on_page(entries, page), true))
            return rc;
    }
    return 0;
}

// LDTR names LDT window w with `entries` entries through HV_SEL_LDT in this
// CPU's own hypervisor GDT page (both GDT windows share it), or is null.
void load_ldt(PerCpu& c, CpuLdt& l, unsigned w, uint32_t entries)
{
    l.ents[w] = entries;
    l.active = w;
    if (!entries) {
        asm volatile("lldt %w0" : : "r"(uint16_t(0)) : "memory");
        return;
    }
    uint64_t* hv_page = reinterpret_cast<uint64_t*>(c.area + HV_GDT_RESERVED_OFFSET);
    const unsigned slot = (HV_SEL_LDT - HV_GDT_RESERVED_OFFSET) / 8;
    const SysDesc d = ldt_desc(c.area + area::kLdtWindow[w], entries * 8 - 1);
    hv_page[slot] = d.lo;
    hv_page[slot + 1] = d.hi;
    asm volatile("lldt %w0" : : "r"(uint16_t(HV_SEL_LDT)) : "memory");
}

// Entry `index` of frame m, now e, into the buffer `buf` of a table of
// `entries` entries whose pages came from `mfns`. The store is one aligned
// 8-byte write: a CPU loading that selector meanwhile reads the old
// descriptor or the new one.
void update_table(uint64_t* buf, const uint64_t* mfns, uint32_t entries, Mfn m, unsigned index, uint64_t e)
{
    for (uint32_t page = 0; page * kDescriptorsPerPage + index < entries; ++page)
        if (mfns[page] == m.v)
            std::atomic_ref<uint64_t>(buf[page * kDescriptorsPerPage + index])
                .store(buffered(e), std::memory_order_relaxed);
}

// ... into every GDT and LDT window in use that took its entries from m for
// domain g. Under g's lock.
void update_copies(const GuestDomain& g, Mfn m, unsigned index, uint64_t e)
{
    for (unsigned cpu = 0; cpu < g_nr_cpus; ++cpu) {
        const DescSource& s = g_source[cpu];
        if (s.owner.load(std::memory_order_acquire) != &g) continue;
        const PerCpu& c = g_cpus[cpu];
        const unsigned w = c.gdt_active;
        update_table(dmap<uint64_t>(Maddr{c.gdt_buf[w]}), s.gdt_mfn[w], c.gdt_ents[w], m, index, e);
        const CpuLdt& l = g_cpu_ldt[cpu];
        const unsigned lw = l.active;
        update_table(dmap<uint64_t>(Maddr{l.buf[lw]}), s.ldt_mfn[lw], l.ents[lw], m, index, e);
    }
}

// Copies and validates `frames` into this CPU's GDT window not in use and
// loads it: v's GDT entries 0 .. entries - 1 from now on (set_gdt's work).
long load_gdt(Vcpu& v, const xen_pfn_t* frames, uint32_t entries);

} // namespace

// set_gdt(frame_list, entries): frame_list names ceil(entries / 512) machine
// frames of the domain; their first `entries` descriptors become the calling
// vCPU's GDT entries 0 .. entries - 1, all later ones (below the reserved
// ones) null. Nothing changes on error.
long do_set_gdt(Vcpu& v, HypercallFrame& f)
{
    const uint32_t entries = uint32_t(f.arg[1]);   // an unsigned int in Xen's prototype
    if (const long rc = set_gdt_entries_check(entries)) return rc;
    xen_pfn_t frames[FIRST_RESERVED_GDT_PAGE];
    const uint32_t nr = gdt_frames(entries);
    if (core()->platform().copy_from_guest(v, frames, Vaddr{f.arg[0]}, nr * sizeof(xen_pfn_t))) return -XEN_EFAULT;
    return load_gdt(v, frames, entries);
}

long guest_gdt_check(const Domain& d, const xen_pfn_t* frames, uint32_t entries)
{
    if (const long rc = set_gdt_entries_check(entries)) return rc;
    Hypervisor& hv = *core();
    for (uint32_t page = 0; page * kDescriptorsPerPage < entries; ++page) {
        const Mfn m{frames[page]};
        if (get_page(hv, m, d.id)) return -XEN_EINVAL;   // not the domain's (Xen: no seg_desc type)
        const uint64_t x = hv.frame(m).type_info.load(std::memory_order_acquire);
        long rc = is_table_type(ti::type(x)) && ti::count(x) ? -XEN_EINVAL : 0;
        const uint64_t* src = static_cast<const uint64_t*>(hv.mem().frame(m));
        for (uint32_t i = 0; i < descriptors_on_page(entries, page) && !rc; ++i) {
            uint64_t e = std::atomic_ref<const uint64_t>(src[i]).load(std::memory_order_relaxed);
            if (!guest_desc_fix(e)) rc = -XEN_EINVAL;
        }
        put_page(hv, m);
        if (rc) return rc;
    }
    return 0;
}

void guest_gdt_start(Vcpu& v)
{
    VcpuArch& a = arch(v);
    if (!a.start_gdt_ents) return;
    // Checked at VCPUOP_initialise; the frames may have changed since (the
    // guest's own writes, or a pin): then the vCPU starts with no GDT
    // entries, whose selectors fault, which it can see and report.
    if (const long rc = load_gdt(v, a.start_gdt, a.start_gdt_ents))
        printk("pvmmu: domain %u vCPU %u: its context's GDT frames are refused now (error %ld): no GDT entries\n",
               unsigned(v.domain->id), v.id, rc);
}

namespace {

long load_gdt(Vcpu& v, const xen_pfn_t* frames, uint32_t entries)
{
    PerCpu& c = this_cpu();
    const DescLockHeld held(guest_domain(v));
    const unsigned w = c.gdt_active ^ 1;   // not in use: free to fill
    c.gdt_ents[w] = entries > c.gdt_ents[w] ? entries : c.gdt_ents[w];   // what fill may write
    if (const long rc = fill(c, w, *v.domain, frames, entries)) return rc;
    trim(c, w, entries);
    load_window(c, w);
    return 0;
}

} // namespace

// MMUEXT_SET_LDT, its arguments checked by the core (page-aligned base, at
// most 8192 entries): Xen's __addr_ok, the base not in the hypervisor's
// part of the address space, is -EINVAL; then each page of the LDT, as the
// guest's tables map it now, must be a frame of the domain that is neither
// a page table nor writable (-EINVAL; not mapped: -EFAULT), holding only
// descriptors set_gdt takes (-EINVAL). Its copy goes into the LDT window
// not in use, which LDTR then names; the calling vCPU's LDT is empty again
// with 0 entries. Nothing changes on error. A vCPU stays on its CPU, so
// the CPU's LDTR is the vCPU's whenever it runs (guest_gdt_reset at its start).
int guest_set_ldt(Vcpu& v, Vaddr base, uint32_t ents)
{
    if (const long rc = set_ldt_base_check(base.v, ents)) return int(rc);
    PerCpu& c = this_cpu();
    CpuLdt& l = g_cpu_ldt[c.id];
    const DescLockHeld held(guest_domain(v));
    const unsigned w = ents ? l.active ^ 1 : l.active;   // not in use: free to fill
    if (const long rc = fill_ldt(l, w, v, base.v, ents)) return int(rc);
    load_ldt(c, l, w, ents);
    arch(v).ldt_base = base.v;
    arch(v).ldt_ents = ents;
    return 0;
}

// update_descriptor(maddr, desc): the 8 bytes at machine address maddr (a
// frame of the domain) become desc, and so does every GDT or LDT entry
// copied from them. Xen's order and errnos: alignment and the descriptor
// first, then the frame (not the caller's, or beyond memory: -EINVAL), then
// a type reference for the write. pvmmu's descriptor frames have no
// descriptor type (they are copied), so that is always Xen's other case, a
// writable one: a page table in use is -EINVAL, and while the reference is
// held the frame cannot become one. Nothing changes on error.
long do_update_descriptor(Vcpu& v, HypercallFrame& f)
{
    const uint64_t maddr = f.arg[0];
    uint64_t desc = f.arg[1];   // as Xen stores it (guest_desc_fix)
    if (const long rc = update_descriptor_check(maddr, desc)) return rc;
    Hypervisor& hv = *core();
    const Mfn m{maddr >> kPageShift};
    GuestDomain& g = guest_domain(v);
    if (get_page(hv, m, g.dom.id)) return -XEN_EINVAL;
    if (get_writable_type(hv, m)) {
        put_page(hv, m);
        return -XEN_EINVAL;
    }
    const unsigned index = unsigned(maddr & (kPageSize - 1)) / 8;
    {
        const DescLockHeld held(g);
        uint64_t* dst = static_cast<uint64_t*>(hv.mem().frame(m)) + index;
        std::atomic_ref<uint64_t>(*dst).store(desc, std::memory_order_relaxed);
        update_copies(g, m, index, desc);
    }
    put_page_and_type(hv, m);
    return 0;
}

void guest_gdt_reset(Vcpu& v)
{
    PerCpu& c = this_cpu();
    DescSource& s = g_source[c.id];
    // The copies stop being the last domain's under its lock (its
    // update_descriptor may be looking at them), then become v's under
    // v's. Domains are never freed (boot/main.cc's g_guests), so the old lock is
    // there to take.
    if (GuestDomain* old = s.owner.load(std::memory_order_relaxed)) {
        const DescLockHeld held(*old);
        s.owner.store(nullptr, std::memory_order_release);
    }
    GuestDomain& g = guest_domain(v);
    const DescLockHeld held(g);
    trim(c, 0, 0);
    trim(c, 1, 0);
    load_window(c, 0);
    CpuLdt& l = g_cpu_ldt[c.id];
    l.ents[l.active ^ 1] = 0;
    load_ldt(c, l, l.active, 0);
    arch(v).ldt_base = 0;
    arch(v).ldt_ents = 0;
    s.owner.store(&g, std::memory_order_release);
}

} // namespace pvmmu::x86
