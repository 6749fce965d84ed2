// hypervisor-pages-denied: reaching, or making executable, what belongs to the
// hypervisor. Models the class of Xen advisories where a guest gained access to
// hypervisor mappings through its own L4 (the Xen-reserved slots 256–271, which
// Xen fills itself) or made a page the hypervisor hands it executable or
// writable (read-only M2P and shared-info style pages; XSA-148 is the
// superpage variant, refused here by the PS rule).
//
// What pvmmu shares with a guest: on bare metal, as Xen, the M2P, read-only
// in L4 slot 256 (MACH2PHYS_VIRT_START); no other hypervisor frame (no
// shared-info page; hypervisor frames are never mappable, with any flags —
// foreign-frame-denied). The sim maps nothing there (it does not answer
// XENMEM_machphys_mapping). Besides the M2P, the only pages it hands a guest
// read-only are the guest's own page tables in its physmap. So the checks are:
//   - where the hypervisor answered XENMEM_machphys_mapping (Xen, bare
//     metal): each of our frames' M2P entries reads its gpfn; stores and
//     fetches there fault, and the entry stays;
//   - link a valid L3 of its own into each hypervisor L4 slot (cmd 0, cmd 2):
//     -EINVAL, the slot stays empty; the same link into a free guest slot
//     works (the refusal is the slot, not the table);
//   - update_va_mapping of an executable mapping at the base of each
//     hypervisor slot: -EINVAL (no L1 maps it); loads, stores and fetches
//     there fault;
//   - update_va_mapping anywhere inside each hypervisor slot, in particular
//     where bare metal's direct map (slot 262, 2 MiB pages) shows a
//     2 MiB-aligned frame of ours that we pinned as an L1: -EINVAL and the
//     L1 unchanged (the walk took the 2 MiB page's frame
//     for the L1 and rewrote it);
//   - NX removal on the read-only physmap mappings of its page tables by cmd 4
//     and cmd 2: allowed (as on Xen, the guest chooses NX on its own frames),
//     and RW stays clear: a store still faults, nothing is written.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "the hypervisor's L4 slots cannot be linked or mapped; NX on page tables grants no write";
const TestConfig test_config = {.cpus = 1};

namespace {

constexpr unsigned kFirstXenSlot = 256, kLastXenSlot = 271, kFreeSlot = 3;
constexpr unsigned kXenM2pSlot = 256;   // the read-only M2P (MACH2PHYS_VIRT_START), where it is mapped
AddressSpace as;

Va slot_base(unsigned s) { return Va{(s >= 256 ? 0xffff'0000'0000'0000ull : 0) | (uint64_t(s) << 39)}; }

// A 2 MiB-aligned frame of ours, zeroed and pinned as an L1; false if the
// domain has none free.
bool pin_aligned_l1(Cpu& c, Gpfn& out)
{
    const BootInfo& b = c.guest->boot();
    for (uint64_t g = c.guest->frames().first().v; g < b.nr_frames; ++g) {
        if (c.guest->mfn(Gpfn{g}).v % kEntriesPerTable != 0 || !c.guest->frames().reserve(c, Gpfn{g}, 1)) continue;
        out = Gpfn{g};
        for (unsigned i = 0; i < kEntriesPerTable; ++i) CHECK(c.mem.store(c.guest->va(out) + i * 8, 0));
        CHECK_EQ(physmap_set_writable(c, out, false), 0);
        CHECK_EQ(pt_pin(c, out, Level::L1), 0);
        return true;
    }
    return false;
}

// Inside every hypervisor slot, not only at its base: where the direct map
// shows the pinned L1's page 7, a byte inside it, and further pages.
void inside_xen_slots(Cpu& c)
{
    Gpfn l1;
    if (!pin_aligned_l1(c, l1)) {
        rt::print("no free 2 MiB-aligned frame: inside-the-slot check skipped");
        return;
    }
    const uint64_t at = maddr_of(c.guest->mfn(l1)).v + 7 * kPageSize;
    const Mfn data = c.guest->mfn(c.guest->frames().first());
    const uint64_t offsets[] = {at, at + 0x123, at + (uint64_t(1) << 21), (uint64_t(1) << 30) + 5 * kPageSize,
                                level_span(Level::L4) - kPageSize};
    unsigned refused = 0, tried = 0;
    for (unsigned s = kFirstXenSlot; s <= kLastXenSlot; ++s) {
        for (uint64_t off : offsets) {
            ++tried;
            refused += CHECK_EQ(hypercall(c, __HYPERVISOR_update_va_mapping, slot_base(s).v + off,
                                          make_pte(data, pte::P | pte::US), UVMF_INVLPG | UVMF_LOCAL),
                                -XEN_EINVAL);
        }
    }
    unsigned changed = 0;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) changed += !CHECK_EQ(load_or(c, c.guest->va(l1) + i * 8), 0);
    rt::print("update_va_mapping inside the hypervisor slots: %u of %u refused; entries of the pinned "
              "2 MiB-aligned L1 changed: %u", refused, tried, changed);
    CHECK_EQ(pt_unpin(c, l1), 0);
    CHECK_EQ(physmap_set_writable(c, l1, true), 0);
    c.guest->frames().free(c, l1);
}

void xen_slots(Cpu& c)
{
    const Gpfn l4 = c.guest->l4();
    const uint64_t link = make_pte(c.guest->mfn(as.root()), pte::kTableLink);
    const Mfn data = c.guest->mfn(c.guest->frames().first());   // an ordinary frame of ours
    for (unsigned s = kFirstXenSlot; s <= kLastXenSlot; ++s) {
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE})
            attack_entry(c, PteRef{l4, s}, Req{ptr_of(c, PteRef{l4, s}, cmd), link}, -XEN_EINVAL,
                         "link into a hypervisor L4 slot");
        const Va va = slot_base(s);
        CHECK_EQ(hypercall(c, __HYPERVISOR_update_va_mapping, va.v, make_pte(data, pte::P | pte::RW | pte::US),
                           UVMF_INVLPG | UVMF_LOCAL),
                 -XEN_EINVAL);
        // Nothing is mapped there but, in slot 256, the machine-to-physical
        // table Xen and bare-metal pvmmu map read-only for PV guests
        // (MACH2PHYS_VIRT_START, xen/arch-x86/xen-x86_64.h): loads there
        // work, stores fault. Entry 0 (machine frame 0) is mapped.
        uint64_t v;
        CHECK_EQ(c.mem.load(va, v), s == kXenM2pSlot && c.guest->boot().m2p != nullptr);
        CHECK(!c.mem.store(va + 8, 0));
        CHECK(!c.mem.fetch(va + 16));
    }
    // The same table links into a guest slot (and is taken out again).
    uint32_t done;
    const Req ok{ptr_of(c, PteRef{l4, kFreeSlot}, MMU_NORMAL_PT_UPDATE), link};
    CHECK_EQ(raw_mmu_update(c, &ok, 1, done), 0);
    CHECK_EQ(load_or(c, slot_base(kFreeSlot) + (as.base().v & (level_span(Level::L4) - 1)) + 12 * level_span(Level::L2)),
             7);
    const Req gone{ptr_of(c, PteRef{l4, kFreeSlot}, MMU_NORMAL_PT_UPDATE), 0};
    CHECK_EQ(raw_mmu_update(c, &gone, 1, done), 0);
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_LOCAL, 0), 0);
}

// The read-only M2P, where the hypervisor says it maps one: every frame of
// ours reads its gpfn there; a store or a fetch faults and changes nothing.
void m2p_view(Cpu& c)
{
    const BootInfo& b = c.guest->boot();
    if (!b.m2p) {
        rt::print("no XENMEM_machphys_mapping (the sim): the M2P checks are skipped");
        return;
    }
    CHECK_EQ(uint64_t(b.m2p), uint64_t(MACH2PHYS_VIRT_START));
    unsigned wrong = 0;
    for (uint64_t g = 0; g < b.nr_frames; ++g) {
        const Mfn m = c.guest->mfn(Gpfn{g});
        uint64_t v = ~0ull;
        wrong += !CHECK(m.v < b.m2p_entries && c.mem.load(Va{uint64_t(&b.m2p[m.v])}, v)) || !CHECK_EQ(v, g);
    }
    const Mfn first = c.guest->mfn(c.guest->frames().first());
    const Va at{uint64_t(&b.m2p[first.v])};
    CHECK(!c.mem.store(at, 0));
    CHECK(!c.mem.fetch(at));
    CHECK_EQ(load_or(c, at), c.guest->frames().first().v);
    rt::print("M2P at %#llx: the entries of our %llu frames, %u wrong; stores and fetches fault",
              (unsigned long long)uint64_t(b.m2p), (unsigned long long)b.nr_frames, wrong);
}

void nx_on_page_tables(Cpu& c)
{
    if (!rt::offers(needs::kFlagRange, "NX on page tables by cmd 4")) return;
    uint32_t done;
    const BootInfo& b = c.guest->boot();
    for (uint64_t g = b.first_pt; g < b.first_pt + b.nr_pt_frames; ++g) {
        const PteRef pm = c.guest->physmap_pte(Gpfn{g});
        uint64_t e = 0, now = 0, first = 0;
        CHECK(pte_read(c, pm, e));
        CHECK(pte_read(c, PteRef{Gpfn{g}, 0}, first));
        const Req set_nx{ptr_of(c, pm, MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::NX, pte::NX, 1)};
        const Req clear_nx{ptr_of(c, pm, MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::NX, 0, 1)};
        const Req clear_nx2{ptr_of(c, pm, MMU_ATOMIC_PT_UPDATE), e & ~pte::NX};
        for (const Req& r : {set_nx, clear_nx, set_nx, clear_nx2}) {
            CHECK_EQ(raw_mmu_update(c, &r, 1, done), 0);
            CHECK(pte_read(c, pm, now));
            CHECK(!(now & pte::RW));
            CHECK(!can_write(c, c.guest->va(Gpfn{g}), ~0ull));
        }
        CHECK_EQ(now & ~pte::AD, e & ~pte::AD & ~pte::NX);
        CHECK_EQ(load_or(c, c.guest->va(Gpfn{g})), first);
    }
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    LivePage live;
    if (!setup_space(as) || !map_live_page(c, as, as.base() + 12 * level_span(Level::L2), 7, live)) return;
    xen_slots(c);
    m2p_view(c);
    inside_xen_slots(c);
    nx_on_page_tables(c);
}
