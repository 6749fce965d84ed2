// foreign-frame-denied: the guest may map only frames it owns (docs/design.md §4). A frame
// of another domain, of the hypervisor or of device memory is refused with
// -EPERM on every path — cmd 0, cmd 2, update_va_mapping, as a table in an L2
// entry, pinning it, making it the base pointer, naming the other domain (or
// the hypervisor) as mmu_update's foreign domain without the privilege, and in
// a multicall; a frame number beyond memory is -EINVAL. Nothing changes.
#include "guest/pagetable.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "mapping another domain's, the hypervisor's or device frames is refused";
const TestConfig test_config = {.cpus = 1, .second_domain = true, .needs = needs::kPvmmuOp};

namespace {

AddressSpace as;

Va spare() { return as.base() + 14 * level_span(Level::L2) + kPageSize; }   // never mapped

struct Target {
    const char* what;
    Mfn mfn;
    long rc;
};

void check_entry_unchanged(Cpu& c, PteRef r, uint64_t before, const char* what, const char* how, long rc, long want)
{
    uint64_t after = ~0ull;
    CHECK(pte_read(c, r, after));
    if (rc != want || after != before)
        rt::fail("%s via %s: rc %ld (want %ld), entry %#llx -> %#llx", what, how, rc, want,
                 (unsigned long long)before, (unsigned long long)after);
}

void in_l1(Cpu& c, const Target& t)
{
    PteRef r;
    CHECK(as.pte_of(c, spare(), r));
    uint64_t e = 0;
    CHECK(pte_read(c, r, e));
    uint32_t done;
    for (uint64_t flags : {pte::P | pte::US, pte::P | pte::RW | pte::US}) {
        for (unsigned cmd : {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE}) {
            const Req req{ptr_of(c, r, cmd), make_pte(t.mfn, flags)};
            check_entry_unchanged(c, r, e, t.what, "mmu_update", raw_mmu_update(c, &req, 1, done), t.rc);
        }
        check_entry_unchanged(c, r, e, t.what, "update_va_mapping",
                              hypercall(c, __HYPERVISOR_update_va_mapping, spare().v, make_pte(t.mfn, flags), 0), t.rc);
        // In a multicall: the entry's own result.
        const uint64_t entry[8] = {__HYPERVISOR_update_va_mapping, 0xbad, spare().v, make_pte(t.mfn, flags), 0, 0, 0, 0};
        CHECK(put_words(c, c.scratch, entry, sizeof(entry)));
        CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, c.scratch.v, 1), 0);
        check_entry_unchanged(c, r, e, t.what, "multicall", long(load_or(c, c.scratch + 8)), t.rc);
    }
}

void as_table(Cpu& c, const Target& t)
{
    Gpfn l2;
    CHECK(pt_child(c, as.root(), table_index(spare(), Level::L3), l2));
    const PteRef r{l2, table_index(spare(), Level::L2) + 1};
    uint64_t e = 0;
    CHECK(pte_read(c, r, e));
    uint32_t done;
    const Req req{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), make_pte(t.mfn, pte::kTableLink)};
    check_entry_unchanged(c, r, e, t.what, "an L2 entry", raw_mmu_update(c, &req, 1, done), t.rc);
    for (unsigned l = 1; l <= 4; ++l)
        check_entry_unchanged(c, r, e, t.what, "pin", mmuext_one(c, MMUEXT_PIN_L1_TABLE + l - 1, t.mfn.v), t.rc);
    check_entry_unchanged(c, r, e, t.what, "NEW_BASEPTR", mmuext_one(c, MMUEXT_NEW_BASEPTR, t.mfn.v), t.rc);
}

// Naming another domain as foreigndom needs a privilege this guest lacks: the
// whole batch is refused before any request is looked at.
void foreigndom(Cpu& c, const rt::ForeignDomain& f)
{
    PteRef r;
    CHECK(as.pte_of(c, spare(), r));
    uint64_t e = 0;
    CHECK(pte_read(c, r, e));
    const Req req{ptr_of(c, r, MMU_NORMAL_PT_UPDATE), make_pte(Mfn{f.first.v + 3}, pte::P | pte::US)};
    for (unsigned dom : {unsigned(f.domid), unsigned(DOMID_XEN), unsigned(DOMID_IO)}) {
        uint32_t done = 99;
        check_entry_unchanged(c, r, e, "foreigndom", "mmu_update", raw_mmu_update(c, &req, 1, done, dom), -XEN_EPERM);
        CHECK_EQ(done, 0);
    }
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    rt::ForeignDomain f;
    if (!rt::foreign_domain(f)) return rt::error("the platform gave no second domain");
    LivePage live;   // builds the L2 and L1 around spare()
    if (!setup_space(as) || !map_live_page(c, as, spare() - kPageSize, 1, live)) return;

    const Target targets[] = {
        {"another domain's data frame", Mfn{f.first.v + f.nr_frames - 1}, -XEN_EPERM},
        {"another domain's L4", Mfn{f.first.v}, -XEN_EPERM},
        {"a hypervisor frame", rt::hypervisor_frame(), -XEN_EPERM},
        {"a device frame", rt::io_frame(), -XEN_EPERM},
        {"a frame beyond memory", Mfn{1ull << 30}, -XEN_EINVAL},
    };
    for (const Target& t : targets) {
        in_l1(c, t);
        as_table(c, t);
    }
    foreigndom(c, f);
    // Still usable afterwards.
    CHECK_EQ(load_or(c, spare() - kPageSize), 1);
}
