// cross-domain-tables: page-table pages of another domain linked into this
// domain's tree. Models the class of Xen advisories where an owner check on a
// page reference or a page-type change was missing, so that one guest could
// reference, type or unpin another's tables: if a link took, this guest would
// walk the other domain's address space (and, by retyping, write it). The second domain's builder laid out its L4, L3, L2 and L1 in its
// first four frames. Every attempt is -EPERM (abi.md §4.6: L2–L4 entries name
// tables of the same domain; §5: pin, unpin and base pointers take only the
// caller's frames): its L3 / L2 / L1 / L4 into the entry of this domain's L4,
// L3, L2 that would hold them; pinning each at its level; unpinning its pinned
// L4; NEW_BASEPTR / NEW_USER_BASEPTR on its L4; the same link with the other
// domain named as foreigndom (no MapForeign privilege). No entry changes, the
// addresses the links would have opened stay unmapped, and this domain's own
// tree still works.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "another domain's page tables cannot be linked, pinned, unpinned or loaded";
const TestConfig test_config = {.cpus = 1, .second_domain = true, .needs = needs::kPvmmuOp};

namespace {

constexpr unsigned kFreeL4Slot = 3;
AddressSpace as;
LivePage live;

Va probe() { return live.va; }

struct Link {
    const char* what;
    PteRef entry;   // the entry of ours that would hold the foreign table
    Mfn table;      // the foreign table, of the level below entry's table
    Va opens;       // an address the link would make reachable
};

void try_link(Cpu& c, const Link& l, unsigned foreigndom)
{
    for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE})
        attack_entry(c, l.entry, Req{ptr_of(c, l.entry, cmd), make_pte(l.table, pte::kTableLink)}, -XEN_EPERM, l.what,
                     foreigndom);
    uint64_t v;
    CHECK(!c.mem.load(l.opens, v));
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    rt::ForeignDomain f;
    if (!rt::foreign_domain(f)) return rt::error("the platform gave no second domain");
    if (!setup_space(as) || !map_live_page(c, as, as.base() + 12 * level_span(Level::L2), 1, live)) return;
    const Gpfn l2 = live.l2;
    const Mfn fl4{f.first.v}, fl3{f.first.v + 1}, fl2{f.first.v + 2}, fl1{f.first.v + 3};

    const unsigned l3_slot = table_index(probe(), Level::L3) + 1, l2_slot = table_index(probe(), Level::L2) + 1;
    const Link links[] = {
        {"its L3 into our L4", PteRef{c.guest->l4(), kFreeL4Slot}, fl3, Va{uint64_t(kFreeL4Slot) << 39}},
        {"its L4 into our L4", PteRef{c.guest->l4(), kFreeL4Slot}, fl4, Va{uint64_t(kFreeL4Slot) << 39}},
        {"its L2 into our L3", PteRef{as.root(), l3_slot}, fl2, as.base() + l3_slot * level_span(Level::L3)},
        {"its L1 into our L2", PteRef{l2, l2_slot},
         fl1, as.base() + table_index(probe(), Level::L3) * level_span(Level::L3) + l2_slot * level_span(Level::L2)},
    };
    for (const Link& l : links) {
        try_link(c, l, DOMID_SELF);
        try_link(c, l, f.domid);   // naming the owner needs MapForeign, which this guest lacks
    }

    // Its tables as ours: pin at their own level, unpin its pinned L4, load its L4.
    const Mfn at_level[] = {fl1, fl2, fl3, fl4};
    for (unsigned l = 0; l < 4; ++l) CHECK_EQ(mmuext_one(c, MMUEXT_PIN_L1_TABLE + l, at_level[l].v), -XEN_EPERM);
    CHECK_EQ(mmuext_one(c, MMUEXT_UNPIN_TABLE, fl4.v), -XEN_EPERM);
    CHECK_EQ(mmuext_one(c, MMUEXT_NEW_BASEPTR, fl4.v), -XEN_EPERM);
    CHECK_EQ(mmuext_one(c, MMUEXT_NEW_USER_BASEPTR, fl4.v), -XEN_EPERM);

    // Our tree is intact and still takes updates.
    CHECK_EQ(load_or(c, probe()), 1);
    CHECK_EQ(as.mprotect(c, probe(), kPageSize, kProtRead), 0);
    CHECK(!can_write(c, probe(), 2));
    CHECK_EQ(as.mprotect(c, probe(), kPageSize, kProtRead | kProtWrite), 0);
    CHECK(can_write(c, probe(), 2));
}
