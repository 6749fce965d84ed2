// flag-range-escalation: MMU_FLAG_RANGE_UPDATE (cmd 4) used to escalate. It
// changes only flags and applies the cmd-2 rules per entry — unless it forgets
// to. Models the class of Xen advisories where a "flags only" fast path
// skipped a check that a full update would have made (XSA-182: the PV
// page-table fast path let RW through onto a page table).
//   - RW raise onto a page table: the test L1 maps itself read-only at entry
//     511 among 511 writable data pages made read-only; one cmd-4 RW raise over
//     all 512 entries must fail (-EINVAL) at the last, and leave every entry,
//     and every data frame's type, as it was.
//   - P on swap-style entries: non-present entries whose frame bits name a
//     hypervisor frame, a device frame, another domain's data and L4, this
//     domain's L4 and the test L1 itself (with RW), a frame beyond memory, and
//     forbidden flags (stored unchecked by cmd 0, as a swap entry is). cmd 4
//     with P (and RW, US, NX cleared) in its mask skips P=0 entries (abi.md
//     §4.5): rc 0, each such entry bit for bit the same, no access through it;
//     the present ones get exactly the new bits. Setting P on them with cmd 2
//     instead is checked like any new mapping and refused.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "FLAG_RANGE cannot raise RW onto a page table nor make swap entries present";
const TestConfig test_config = {.cpus = 1, .second_domain = true, .needs = needs::kFlagRange | needs::kPvmmuOp};

namespace {

TestL1 t;
uint64_t orig[kEntriesPerTable];

uint64_t fr(unsigned count, uint64_t mask, uint64_t bits) { return pvmmu::abi::encode_flag_range(mask, bits & mask, count); }

void rw_raise_onto_self_map(Cpu& c)
{
    constexpr unsigned kSelf = kEntriesPerTable - 1;
    const Mfn self = c.guest->mfn(t.table);
    uint32_t done;
    const Req lower{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE), fr(kSelf, pte::RW, 0)};
    CHECK_EQ(raw_mmu_update(c, &lower, 1, done), 0);
    const Req map_self{ptr_of(c, t.ref(kSelf), MMU_NORMAL_PT_UPDATE), make_pte(self, pte::P | pte::US)};
    CHECK_EQ(raw_mmu_update(c, &map_self, 1, done), 0);

    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    const Req raise{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE), fr(kEntriesPerTable, pte::RW, pte::RW)};
    done = 99;
    CHECK_EQ(raw_mmu_update(c, &raise, 1, done), -XEN_EINVAL);
    CHECK_EQ(done, 0);
    CHECK(read_table(c, t.table, after));
    CHECK_EQ(table_diff(before, after), 0);
    // Entry 511's page (the table) is still read-only: a store faults. Not of
    // 0, which the writable page tables (abi.md §12.5) would take into entry
    // 0: of the table mapped writable, which no check takes.
    CHECK(!can_write(c, c.guest->va(t.gpfn(kSelf)), make_pte(self, pte::P | pte::RW | pte::US)));
    // No writable reference survived on the frames before the table: each can
    // still become a page table (they are zero, as the builder left them).
    for (unsigned i : {0u, 1u, 255u, kSelf - 1}) {
        CHECK_EQ(pt_pin(c, t.gpfn(i), Level::L1), 0);
        CHECK_EQ(pt_unpin(c, t.gpfn(i)), 0);
    }
    // Restore: entry 511 back to its own frame, everything writable.
    const Req unmap{ptr_of(c, t.ref(kSelf), MMU_NORMAL_PT_UPDATE), orig[kSelf]};
    CHECK_EQ(raw_mmu_update(c, &unmap, 1, done), 0);
    const Req restore{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE), fr(kEntriesPerTable, pte::RW, pte::RW)};
    CHECK_EQ(raw_mmu_update(c, &restore, 1, done), 0);
}

struct Swap {
    const char* what;
    uint64_t val;   // P = 0
    long rc;        // what setting P with cmd 2 gives
};

void swap_entries(Cpu& c, const rt::ForeignDomain& f)
{
    const uint64_t rwx = pte::RW | pte::US | pte::A | pte::D;   // RW, executable: what the attacker wants
    const Swap swaps[] = {
        {"hypervisor frame", make_pte(rt::hypervisor_frame(), rwx), -XEN_EPERM},
        {"device frame", make_pte(rt::io_frame(), rwx), -XEN_EPERM},
        {"other domain's data", make_pte(Mfn{f.first.v + f.nr_frames - 1}, rwx), -XEN_EPERM},
        {"other domain's L4", make_pte(f.first, rwx), -XEN_EPERM},
        {"own L4, writable", make_pte(c.guest->mfn(c.guest->l4()), rwx), -XEN_EINVAL},
        {"this L1, writable", make_pte(c.guest->mfn(t.table), rwx), -XEN_EINVAL},
        {"beyond memory", make_pte(Mfn{1ull << 30}, rwx), -XEN_EINVAL},
        {"forbidden flags", make_pte(c.guest->mfn(t.gpfn(0)), pte::US | pte::PCD | pte::G | (1ull << 60)), -XEN_EINVAL},
    };
    constexpr unsigned kFirst = 100, kN = sizeof(swaps) / sizeof(swaps[0]);
    uint32_t done;
    for (unsigned k = 0; k < kN; ++k) {
        const Req w{ptr_of(c, t.ref(kFirst + k), MMU_NORMAL_PT_UPDATE), swaps[k].val};
        CHECK_EQ(raw_mmu_update(c, &w, 1, done), 0);   // non-present: stored as given
    }
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));

    // Over the swap entries alone, and over the whole table.
    const uint64_t mask = pte::P | pte::RW | pte::US | pte::NX, bits = pte::P | pte::RW | pte::US;
    const struct {
        unsigned first, count;
    } ranges[] = {{kFirst, kN}, {0, kEntriesPerTable}};
    for (auto [first, count] : ranges) {
        const Req r{ptr_of(c, t.ref(first), MMU_FLAG_RANGE_UPDATE), fr(count, mask, bits)};
        CHECK_EQ(raw_mmu_update(c, &r, 1, done), 0);
        const Req p_only{ptr_of(c, t.ref(first), MMU_FLAG_RANGE_UPDATE), fr(count, pte::P, pte::P)};
        CHECK_EQ(raw_mmu_update(c, &p_only, 1, done), 0);
    }
    CHECK(read_table(c, t.table, after));
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        // Present entries already were P|RW|US without NX: the raise changed no bit.
        if (after[i] != before[i])
            rt::fail("entry %u: %#llx -> %#llx", i, (unsigned long long)before[i], (unsigned long long)after[i]);
    }
    for (unsigned k = 0; k < kN; ++k) {
        CHECK(!can_read(c, c.guest->va(t.gpfn(kFirst + k))));
        // The honest way to make it present is checked, and refused.
        attack_entry(c, t.ref(kFirst + k),
                     Req{ptr_of(c, t.ref(kFirst + k), MMU_ATOMIC_PT_UPDATE), swaps[k].val | pte::P}, swaps[k].rc,
                     swaps[k].what);
    }
    for (unsigned k = 0; k < kN; ++k) {
        const Req back{ptr_of(c, t.ref(kFirst + k), MMU_NORMAL_PT_UPDATE), orig[kFirst + k]};
        CHECK_EQ(raw_mmu_update(c, &back, 1, done), 0);
    }
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    rt::ForeignDomain f;
    if (!rt::foreign_domain(f)) return rt::error("the platform gave no second domain");
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));
    rw_raise_onto_self_map(c);
    swap_entries(c, f);
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    CHECK_EQ(table_diff(orig, now, true), 0);
    CHECK(can_write(c, c.guest->va(t.gpfn(3)), 3));   // the table still works
}
