// flag-range-basic: MMU_FLAG_RANGE_UPDATE on a physmap L1 the test owns. Every
// flag bit the guest may own — in 11:0 and in 63:52, NX included — is set and
// cleared over the whole table and each present entry becomes exactly
// (cur & ~M) | N; P=0 entries (holes, swap-style values) stay bit for bit;
// every count 1..512 changes exactly that many entries (513..1023 do not fit in
// a table: flag-range-bounds); A/D survive unless masked; NX really stops
// instruction fetches.
#include "guest/tlb.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "MMU_FLAG_RANGE_UPDATE: bits 11:0 and 63:52, NX, holes skipped, counts 1..512";
const TestConfig test_config = {.cpus = 1, .needs = needs::kFlagRange};

namespace {

TestL1 t;
uint64_t cur[kEntriesPerTable];

bool is_hole(unsigned i) { return i % 7 == 3; }
// A swap-style entry: not present, bits everywhere else.
uint64_t hole_value(unsigned i) { return (uint64_t(0x1234 + i) << kPageShift) | pte::AVL11 | (3ull << 52) | pte::D; }

long range(Cpu& c, unsigned first, uint64_t mask, uint64_t bits, unsigned count, uint32_t& done)
{
    const Req r{ptr_of(c, t.ref(first), MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(mask, bits & mask, count)};
    return raw_mmu_update(c, &r, 1, done);
}

// Expected table after a request over [first, first + count) applied to `cur`.
void expect(Cpu& c, unsigned first, unsigned count, uint64_t mask, uint64_t bits, const char* what)
{
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    unsigned bad = 0;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        uint64_t want = cur[i];
        if (i >= first && i < first + count && pte_present(cur[i])) want = ((cur[i] & ~mask) | (bits & mask)) | pte::US;
        bad += now[i] != want;
        cur[i] = now[i];
    }
    if (bad) rt::fail("%s: %u entries not as expected", what, bad);
}

void one(Cpu& c, unsigned first, uint64_t mask, uint64_t bits, unsigned count, const char* what)
{
    uint32_t done = 0;
    CHECK_EQ(range(c, first, mask, bits, count, done), 0);
    CHECK_EQ(done, 1);
    expect(c, first, count, mask, bits, what);
}

void every_bit(Cpu& c)
{
    // Bits a guest may own in an L1 entry: not P (that is mapping, not flags), not
    // US (forced on), not the cache attributes, G or protection keys.
    uint64_t bits[] = {pte::RW, pte::A, pte::D, pte::AVL9, pte::AVL10, pte::AVL11, pte::NX, 0, 0, 0, 0, 0, 0, 0};
    for (unsigned b = 52; b <= 58; ++b) bits[7 + b - 52] = 1ull << b;
    for (uint64_t bit : bits) {
        one(c, 0, bit, bit, kEntriesPerTable, "set one bit");
        one(c, 0, bit, 0, kEntriesPerTable, "clear one bit");
    }
    // All of them at once, to a pattern.
    uint64_t all = 0;
    for (uint64_t bit : bits) all |= bit;
    const uint64_t pattern = pte::AVL9 | pte::AVL11 | pte::NX | (0x55ull << 52) | pte::A;
    one(c, 0, all, pattern, kEntriesPerTable, "all bits to a pattern");
    one(c, 0, all & ~pte::AD, pte::RW, kEntriesPerTable, "back, A/D kept");
    // US cannot be taken away: the hypervisor keeps present entries user entries.
    one(c, 0, pte::US, 0, kEntriesPerTable, "US stays");
}

void counts(Cpu& c)
{
    unsigned bad = 0;
    for (unsigned n = 1; n <= kEntriesPerTable; ++n) {
        uint32_t done = 0;
        bad += range(c, 0, pte::AVL10, pte::AVL10, n, done) != 0 || done != 1;
        uint64_t now[kEntriesPerTable];
        CHECK(read_table(c, t.table, now));
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const bool want = pte_present(cur[i]) && i < n;
            bad += ((now[i] & pte::AVL10) != 0) != want || (now[i] & ~pte::AVL10) != cur[i];
        }
        bad += range(c, 0, pte::AVL10, 0, kEntriesPerTable, done) != 0;
    }
    CHECK_EQ(bad, 0);
    // Ranges that start inside the table.
    one(c, 511, pte::AVL9, pte::AVL9, 1, "the last entry alone");
    one(c, 100, pte::AVL9, pte::AVL9, 412, "from 100 to the end");
    one(c, 0, pte::AVL9, 0, kEntriesPerTable, "clear");
}

void nx(Cpu& c)
{
    const unsigned i = 5;   // a present entry
    const Va va = c.guest->va(t.gpfn(i));
    CHECK(c.mem.fetch(va));
    one(c, i, pte::NX, pte::NX, 1, "NX on");
    CHECK_EQ(flush_local_page(c, va), 0);
    CHECK(!c.mem.fetch(va));   // no address space covers the physmap: the fault stands
    one(c, i, pte::NX, 0, 1, "NX off");
    CHECK_EQ(flush_local_page(c, va), 0);
    CHECK(c.mem.fetch(va));
}

void ad_survive(Cpu& c)
{
    // Writes set D on present entries; a request that does not mask D keeps it.
    for (unsigned i = 0; i < 64; ++i)
        if (!is_hole(i)) CHECK(c.mem.store(c.guest->va(t.gpfn(i)), i));
    CHECK(read_table(c, t.table, cur));
    unsigned dirty = 0;
    for (unsigned i = 0; i < 64; ++i) dirty += (cur[i] & pte::D) != 0;
    CHECK_EQ(dirty, 64);   // holes carry D in their software value
    one(c, 0, pte::NX | pte::AVL10, pte::AVL10, 64, "D kept when not masked");
    one(c, 0, pte::D, 0, 64, "D cleared when masked");
    one(c, 0, pte::AVL10, 0, 64, "restore");
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        if (!is_hole(i)) continue;
        PteLock l(c, t.ref(i));
        CHECK_EQ(set_pte(c, l, hole_value(i)), 0);
    }
    CHECK(read_table(c, t.table, cur));
    unsigned holes = 0;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) holes += cur[i] == hole_value(i);
    CHECK_EQ(holes, 73);

    every_bit(c);
    counts(c);
    nx(c);
    ad_survive(c);

    // The holes never changed.
    holes = 0;
    CHECK(read_table(c, t.table, cur));
    for (unsigned i = 0; i < kEntriesPerTable; ++i) holes += cur[i] == hole_value(i);
    CHECK_EQ(holes, 73);
}
