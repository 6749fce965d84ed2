// flag-range-bounds: the edges of MMU_FLAG_RANGE_UPDATE. count 0 is a no-op
// that succeeds; a range past the end of the table, a must-be-zero bit, a
// forbidden flag or a ptr that is no L1 give -EINVAL and change nothing; a
// request that fails in the middle of its range (an RW raise that reaches a
// page table) leaves every entry as it was and keeps no reference (the frames
// before the failure can still become page tables); in a batch, the requests
// before it are done and the ones after it are not.
#include "guest/pagetable.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "MMU_FLAG_RANGE_UPDATE bounds: count 0, past the end, MBZ, mid-range failure restored";
const TestConfig test_config = {.cpus = 1, .needs = needs::kFlagRange};

namespace {

TestL1 t;

// ptr of a FLAG_RANGE request starting at entry `first` of the test L1.
uint64_t req(Cpu& c, unsigned first) { return ptr_of(c, t.ref(first), MMU_FLAG_RANGE_UPDATE); }
uint64_t val(uint64_t mask, uint64_t bits, unsigned count) { return pvmmu::abi::encode_flag_range(mask, bits & mask, count); }

// One raw request; rc and done must be as given, and the table must not change.
void refused(Cpu& c, uint64_t ptr, uint64_t v, long want, const char* what)
{
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    const Req r{ptr, v};
    uint32_t done = 99;
    const long rc = raw_mmu_update(c, &r, 1, done);
    CHECK(read_table(c, t.table, after));
    if (rc != want || done != 0 || table_diff(before, after) != 0)
        rt::fail("%s: rc %ld (want %ld), done %u (want 0), %u entries changed", what, rc, want, done,
                 table_diff(before, after));
}

void count_zero(Cpu& c)
{
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    for (unsigned first : {0u, 1u, 511u}) {
        const Req r{req(c, first), val(0xfff, 0xfff & ~0x19full, 0)};
        uint32_t done = 0;
        CHECK_EQ(raw_mmu_update(c, &r, 1, done), 0);
        CHECK_EQ(done, 1);
    }
    CHECK(read_table(c, t.table, after));
    CHECK_EQ(table_diff(before, after), 0);
}

void past_the_end(Cpu& c)
{
    const struct {
        unsigned first, count;
    } cases[] = {{0, 513}, {1, 512}, {511, 2}, {0, 1023}, {300, 300}, {511, 1023}};
    for (auto [first, count] : cases) refused(c, req(c, first), val(pte::AVL10, pte::AVL10, count), -XEN_EINVAL, "past the end");
    // Exactly to the end is fine.
    const Req ok{req(c, 1), val(pte::AVL10, 0, 511)};
    uint32_t done = 0;
    CHECK_EQ(raw_mmu_update(c, &ok, 1, done), 0);
}

void must_be_zero(Cpu& c)
{
    for (unsigned b = 58; b < 64; ++b)
        refused(c, req(c, 0), val(pte::AVL10, pte::AVL10, 4) | (1ull << b), -XEN_EINVAL, "MBZ bit");
}

void forbidden_flags(Cpu& c)
{
    // Cache attributes, G and protection keys may not be set by a guest.
    const uint64_t bad[] = {pte::PWT, pte::PCD, pte::PAT, pte::G, 1ull << 59, 1ull << 62};
    for (uint64_t b : bad) refused(c, req(c, 0), val(b, b, 8), -XEN_EINVAL, "forbidden flag");
}

void not_an_l1(Cpu& c)
{
    const Maddr l4 = maddr_of(c.guest->mfn(c.guest->l4()));
    const Maddr l2 = maddr_of(c.guest->mfn(Gpfn{2}));   // the builder's first L2
    const Maddr data = maddr_of(c.guest->mfn(t.gpfn(0)));
    for (Maddr m : {l4, l2, data})
        refused(c, m.v | MMU_FLAG_RANGE_UPDATE, val(pte::AVL10, pte::AVL10, 1), -XEN_EINVAL, "ptr is no L1");
}

// Entries [x - 10, x + 10) read-only, x a pinned L1 in the middle.
void mid_range_failure(Cpu& c)
{
    const unsigned x = 200;
    for (unsigned i = x - 10; i < x + 10; ++i) {
        CHECK(zero_frame(c, t.gpfn(i)));
        CHECK_EQ(physmap_set_writable(c, t.gpfn(i), false), 0);
    }
    CHECK_EQ(pt_pin(c, t.gpfn(x), Level::L1), 0);

    // The raise takes a writable reference per entry, in order, and meets the L1.
    refused(c, req(c, x - 10), val(pte::RW, pte::RW, 20), -XEN_EINVAL, "raise over a page table");
    // No reference kept: each frame before x can still become a page table.
    for (unsigned i = x - 10; i < x; ++i) {
        CHECK_EQ(pt_pin(c, t.gpfn(i), Level::L1), 0);
        CHECK_EQ(pt_unpin(c, t.gpfn(i)), 0);
    }

    // In a batch: the request before is done, the one after is not.
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    const Req batch[] = {
        {req(c, x - 10), val(pte::AVL10, pte::AVL10, 10)},
        {req(c, x - 10), val(pte::RW, pte::RW, 20)},
        {req(c, x - 10), val(pte::AVL11, pte::AVL11, 10)},
    };
    uint32_t done = 0;
    CHECK_EQ(raw_mmu_update(c, batch, 3, done), -XEN_EINVAL);
    CHECK_EQ(done, 1);
    CHECK(read_table(c, t.table, after));
    CHECK_EQ(table_diff(before, after), 10);
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const uint64_t want = i >= x - 10 && i < x ? before[i] | pte::AVL10 : before[i];
        if (after[i] != want) rt::fail("entry %u: %#llx, want %#llx", i, (unsigned long long)after[i], (unsigned long long)want);
    }

    CHECK_EQ(pt_unpin(c, t.gpfn(x)), 0);
    for (unsigned i = x - 10; i < x + 10; ++i) CHECK_EQ(physmap_set_writable(c, t.gpfn(i), true), 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    count_zero(c);
    past_the_end(c);
    must_be_zero(c);
    forbidden_flags(c);
    not_an_l1(c);
    mid_range_failure(c);
}
