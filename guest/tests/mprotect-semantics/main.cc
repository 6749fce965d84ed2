// mprotect-semantics: RW -> RO -> NONE -> RW round trips over a region that
// spans three L1s. Every access faults or succeeds as the protection says, on
// the vCPU that made the change and on another one, and the contents survive.
// Also: VMA splits and merges, EXEC, errors that change nothing, the hypercalls
// of a full-L1 change at the FlagRange level, and a clean teardown.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "mprotect RW/RO/NONE round trips: accesses fault as the protection says, contents kept";
const TestConfig test_config = {.cpus = 2};

namespace {

constexpr uint64_t kPages = 600;
AddressSpace as;

// 40 pages in the first L1, 512 in the second, 48 in the third.
Va region() { return Va{as.base().v + 2 * level_span(Level::L2) - 40 * kPageSize}; }
uint64_t pattern(uint64_t i, unsigned round) { return 0x5eed'0000'0000'0000ull | (uint64_t(round) << 32) | i; }

// Reads the first word (expects the pattern), writes the second; both must
// succeed or fail as `prot` says. Pages [first, first + n).
unsigned mismatches(Cpu& c, uint64_t first, uint64_t n, unsigned prot, unsigned round)
{
    const bool rd = prot != kProtNone, wr = prot & kProtWrite;
    unsigned bad = 0;
    for (uint64_t i = first; i < first + n; ++i) {
        uint64_t v = 0;
        const bool r = c.mem.load(page(region(), i), v);
        bad += r != rd || (r && v != pattern(i, round));
        bad += can_write(c, page(region(), i) + 8, i) != wr;
    }
    return bad;
}

// The same check on every vCPU.
void expect_all(uint64_t first, uint64_t n, unsigned prot, unsigned round, const char* what)
{
    rt::on_all([&](Cpu& c) {
        if (unsigned bad = mismatches(c, first, n, prot, round))
            rt::fail("%s: %u wrong accesses on vCPU %u", what, bad, c.id);
    });
}

// Every entry of [first, first + n) has exactly `want` in the bits mprotect owns.
void expect_ptes(Cpu& c, uint64_t first, uint64_t n, unsigned prot, const char* what)
{
    unsigned bad = 0;
    for (uint64_t i = first; i < first + n; ++i) {
        const uint64_t e = pte_at(c, as, page(region(), i));
        bad += (e & kProtBits) != (prot_to_bits(prot) & kProtBits) || !(e & pte::D) || pte_mfn(e).v == 0;
    }
    if (bad) rt::fail("%s: %u entries with the wrong bits", what, bad);
}

void round_trips(Cpu& c)
{
    for (uint64_t i = 0; i < kPages; ++i)
        if (!c.mem.store(page(region(), i), pattern(i, 0))) rt::fail("first touch of page %llu failed", (unsigned long long)i);
    expect_all(0, kPages, kProtRead | kProtWrite, 0, "RW");

    // Each step with whether it takes access away (then it is flushed once).
    const struct {
        unsigned prot;
        bool reduces;
    } steps[] = {{kProtRead, true},  {kProtNone, true},  {kProtRead | kProtWrite, false},
                 {kProtNone, true},  {kProtRead, false}, {kProtRead | kProtWrite, false}};
    for (auto [prot, reduces] : steps) {
        const Snap s0 = snap(c);
        CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, prot), 0);
        const Snap s1 = snap(c);
        // Reductions are flushed once, on every vCPU that entered; raises never.
        CHECK_EQ(s1.flush_remote - s0.flush_remote, reduces ? 1 : 0);
        CHECK_EQ(s1.flush_local - s0.flush_local, 0);
        expect_ptes(c, 0, kPages, prot, "entries after mprotect");
        expect_all(0, kPages, prot, 0, "after mprotect");
    }
}

void split_and_merge(Cpu& c)
{
    const unsigned rw = kProtRead | kProtWrite;
    CHECK_EQ(as.mprotect(c, page(region(), 100), 10 * kPageSize, kProtRead), 0);
    expect_all(0, 100, rw, 0, "left of the split");
    expect_all(100, 10, kProtRead, 0, "inside the split");
    expect_all(110, kPages - 110, rw, 0, "right of the split");
    CHECK_EQ(as.mprotect(c, page(region(), 100), 10 * kPageSize, rw), 0);
    expect_all(0, kPages, rw, 0, "after the merge");
    unsigned prot = 0;
    CHECK(as.prot_at(page(region(), 105), prot) && prot == rw);
}

void exec(Cpu& c)
{
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead | kProtExec), 0);
    unsigned bad = 0;
    for (uint64_t i = 0; i < kPages; ++i) bad += !c.mem.fetch(page(region(), i));
    CHECK_EQ(bad, 0);
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead), 0);
    rt::on_all([&](Cpu& v) {
        unsigned fetched = 0;
        for (uint64_t i = 0; i < kPages; ++i) fetched += v.mem.fetch(page(region(), i));
        CHECK_EQ(fetched, 0);
    });
    CHECK_EQ(as.mprotect(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);
}

// Invalid requests fail with POSIX's errors and change nothing.
void errors(Cpu& c)
{
    const Snap s0 = snap(c);
    CHECK_EQ(as.mprotect(c, region() + 8, kPageSize, kProtRead), -XEN_EINVAL);
    CHECK_EQ(as.mprotect(c, region(), kPageSize, 8), -XEN_EINVAL);
    CHECK_EQ(as.mprotect(c, region(), (kPages + 1) * kPageSize, kProtRead), -XEN_ENOMEM);   // a hole
    CHECK_EQ(as.mprotect(c, Va{as.base().v - kPageSize}, kPageSize, kProtRead), -XEN_ENOMEM);
    CHECK_EQ(as.mprotect(c, region(), 0, kProtRead), 0);
    CHECK_EQ(snap(c).hypercalls, s0.hypercalls);
    expect_all(0, kPages, kProtRead | kProtWrite, 0, "after refused mprotects");
}

// A full L1 (512 present entries) at the FlagRange level: one cmd-4 request in
// one mmu_update, plus one flush for the reduction. docs/guest.md quotes these.
void full_l1_counts(Cpu& c)
{
    if (!rt::offers(needs::kFlagRange, "the full-L1 counts at the FlagRange level")) return;
    const Va l1 = as.base() + 8 * level_span(Level::L2);
    CHECK_EQ(as.map_anon(c, l1, kEntriesPerTable * kPageSize, kProtRead | kProtWrite), 0);
    for (unsigned i = 0; i < kEntriesPerTable; ++i) CHECK(c.mem.store(page(l1, i), i));
    CHECK(c.guest->level() == MmuLevel::FlagRange);

    Snap a = snap(c);
    CHECK_EQ(as.mprotect(c, l1, kEntriesPerTable * kPageSize, kProtRead), 0);
    Snap b = snap(c);
    CHECK_EQ(b.mmu_calls - a.mmu_calls, 1);
    CHECK_EQ(b.req4 - a.req4, 1);
    CHECK_EQ(b.req2 - a.req2, 0);
    CHECK_EQ(b.mmuext_calls - a.mmuext_calls, 1);   // 512 pages > threshold: one whole flush
    CHECK_EQ(b.invlpg_pages - a.invlpg_pages, 0);
    CHECK_EQ(b.hypercalls - a.hypercalls, 2);

    a = snap(c);
    CHECK_EQ(as.mprotect(c, l1, kEntriesPerTable * kPageSize, kProtRead | kProtWrite), 0);
    b = snap(c);
    CHECK_EQ(b.mmu_calls - a.mmu_calls, 1);
    CHECK_EQ(b.req4 - a.req4, 1);
    CHECK_EQ(b.hypercalls - a.hypercalls, 1);   // a raise: no flush

    // PROT_NONE pages coming back need references: cmd 2, still one hypercall.
    CHECK_EQ(as.mprotect(c, l1, kEntriesPerTable * kPageSize, kProtNone), 0);
    a = snap(c);
    CHECK_EQ(as.mprotect(c, l1, kEntriesPerTable * kPageSize, kProtRead | kProtWrite), 0);
    b = snap(c);
    CHECK_EQ(b.mmu_calls - a.mmu_calls, 1);
    CHECK_EQ(b.req2 - a.req2, kEntriesPerTable);
    CHECK_EQ(b.req4 - a.req4, 0);
    unsigned bad = 0;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) bad += load_or(c, page(l1, i)) != i;
    CHECK_EQ(bad, 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    const uint64_t free_before = c.guest->frames().nr_free();
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, region(), kPages * kPageSize, kProtRead | kProtWrite), 0);

    const Snap s0 = snap(c);
    round_trips(c);
    const Snap s1 = snap(c);
    CHECK_EQ(s1.demand_zero - s0.demand_zero, kPages);
    CHECK_EQ(s1.spurious, 0);

    split_and_merge(c);
    exec(c);
    errors(c);
    full_l1_counts(c);

    CHECK_EQ(as.destroy(c), 0);
    CHECK_EQ(c.guest->frames().nr_free(), free_before);
}
