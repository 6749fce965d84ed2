// feature-fallback: the library detects the hypervisor's features once at
// start-up and falls back (docs/design.md §6). The policy denies MMU_FLAG_RANGE_UPDATE
// before the guest starts: the library must find no flag-range feature and use
// cmd-2 arrays. Then cmd 2 is denied too while the library still believes in
// it: the first mprotect is refused (-EPERM), the library drops to cmd 0 with
// get_and_clear and redoes the L1. Detected again, it stays there. At every
// level mprotect stays correct (accesses fault or succeed as they should, on
// both vCPUs, contents kept, written pages stay dirty) and the hypercalls for
// a full 512-entry L1 are exactly the ones docs/guest.md lists.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "FLAG_RANGE then cmd 2 denied: mprotect stays correct on the fallbacks";
const TestConfig test_config = {.cpus = 2, .deny = deny::kFlagRange, .needs = needs::kPvmmuOp};

namespace {

constexpr unsigned kN = kEntriesPerTable;
constexpr unsigned rw = kProtRead | kProtWrite;
AddressSpace as;

Va region() { return as.base() + 16 * level_span(Level::L2); }   // exactly one L1

struct Counts {
    uint64_t mmu_calls, req0, req2, req4, mmuext_calls;
};

Counts mprotect_counted(Cpu& c, unsigned prot)
{
    const Snap a = snap(c);
    CHECK_EQ(as.mprotect(c, region(), kN * kPageSize, prot), 0);
    const Snap b = snap(c);
    return Counts{b.mmu_calls - a.mmu_calls, b.req0 - a.req0, b.req2 - a.req2, b.req4 - a.req4,
                  b.mmuext_calls - a.mmuext_calls};
}

void expect_counts(const Counts& got, const Counts& want, const char* what)
{
    if (got.mmu_calls != want.mmu_calls || got.req0 != want.req0 || got.req2 != want.req2 ||
        got.req4 != want.req4 || got.mmuext_calls != want.mmuext_calls)
        rt::fail("%s: mmu_update %llu (want %llu), cmd0 %llu (%llu), cmd2 %llu (%llu), cmd4 %llu (%llu), "
                 "mmuext %llu (%llu)",
                 what, (unsigned long long)got.mmu_calls, (unsigned long long)want.mmu_calls,
                 (unsigned long long)got.req0, (unsigned long long)want.req0, (unsigned long long)got.req2,
                 (unsigned long long)want.req2, (unsigned long long)got.req4, (unsigned long long)want.req4,
                 (unsigned long long)got.mmuext_calls, (unsigned long long)want.mmuext_calls);
    else
        rt::print("%-44s mmu_update %llu (cmd0 %llu, cmd2 %llu, cmd4 %llu), mmuext %llu", what,
                  (unsigned long long)got.mmu_calls, (unsigned long long)got.req0, (unsigned long long)got.req2,
                  (unsigned long long)got.req4, (unsigned long long)got.mmuext_calls);
}

// Accesses on every vCPU as `prot` says; contents i (first word of page i).
void expect_access(unsigned prot, const char* what)
{
    rt::on_all([&](Cpu& v) {
        unsigned bad = 0;
        for (unsigned i = 0; i < kN; ++i) {
            uint64_t x = 0;
            const bool r = v.mem.load(page(region(), i), x);
            bad += r != (prot != kProtNone) || (r && x != i);
            bad += can_write(v, page(region(), i) + 8, v.id) != bool(prot & kProtWrite);
        }
        if (bad) rt::fail("%s: %u wrong accesses on vCPU %u", what, bad, v.id);
    });
}

void round_trip(Cpu& c, const char* level)
{
    const unsigned steps[] = {kProtRead, kProtNone, rw, kProtRead | kProtExec, rw};
    for (unsigned p : steps) {
        CHECK_EQ(as.mprotect(c, region(), kN * kPageSize, p), 0);
        expect_access(p, level);
    }
    // Every page was written, so every entry is dirty (Normal: assumed dirty too).
    unsigned clean = 0;
    for (unsigned i = 0; i < kN; ++i) clean += !(pte_at(c, as, page(region(), i)) & pte::D);
    CHECK_EQ(clean, 0);
}

void atomic_level(Cpu& c)
{
    CHECK(c.guest->level() == MmuLevel::Atomic);
    CHECK(!(c.guest->features() & (1u << PVMMU_FEAT_flag_range_update)));
    CHECK(c.guest->features() & (1u << XENFEAT_mmu_pt_update_preserve_ad));
    round_trip(c, "cmd-2 arrays");
    expect_counts(mprotect_counted(c, kProtRead), {1, 0, kN, 0, 1}, "Atomic, 512 PTEs/call: RW->RO");
    expect_counts(mprotect_counted(c, rw), {1, 0, kN, 0, 0}, "Atomic, 512 PTEs/call: RO->RW");
    c.guest->config.batch_ptes = 31;   // Linux-on-Xen's multicall batch
    expect_counts(mprotect_counted(c, kProtRead), {17, 0, kN, 0, 1}, "Atomic, 31 PTEs/call: RW->RO");
    expect_counts(mprotect_counted(c, rw), {17, 0, kN, 0, 0}, "Atomic, 31 PTEs/call: RO->RW");
    c.guest->config.batch_ptes = kDefaultBatchPtes;
}

// cmd 2 goes away under the library's feet: the refusal drops the level and the
// L1 is redone with cmd 0.
void refused_at_use(Cpu& c)
{
    CHECK(rt::deny(deny::kMmuAtomic));
    const uint64_t down0 = c.stats.downgrades.get();
    const Counts got = mprotect_counted(c, kProtRead);
    CHECK(c.guest->level() == MmuLevel::Normal);
    CHECK_EQ(c.stats.downgrades.get() - down0, 1);
    // The refused call (its first request failed, nothing done), then the redo.
    expect_counts(got, {2, 2 * kN, kN, 0, 1}, "cmd 2 refused at use: RW->RO");
    expect_access(kProtRead, "after the refusal");
    CHECK_EQ(as.mprotect(c, region(), kN * kPageSize, rw), 0);
    expect_access(rw, "after the refusal, back to RW");
}

void normal_level(Cpu& c)
{
    CHECK_EQ(c.guest->detect_features(c), 0);
    CHECK(c.guest->level() == MmuLevel::Normal);
    CHECK(!(c.guest->features() & (1u << XENFEAT_mmu_pt_update_preserve_ad)));
    round_trip(c, "cmd 0 + get_and_clear");
    expect_counts(mprotect_counted(c, kProtRead), {1, 2 * kN, 0, 0, 1}, "Normal, 512 PTEs/call: RW->RO");
    expect_counts(mprotect_counted(c, rw), {1, 2 * kN, 0, 0, 0}, "Normal, 512 PTEs/call: RO->RW");
    expect_counts(mprotect_counted(c, kProtNone), {1, 2 * kN, 0, 0, 1}, "Normal, 512 PTEs/call: RW->NONE");
    expect_counts(mprotect_counted(c, rw), {1, kN, 0, 0, 0}, "Normal, 512 PTEs/call: NONE->RW");
    c.guest->config.batch_ptes = 31;
    expect_counts(mprotect_counted(c, kProtRead), {17, 2 * kN, 0, 0, 1}, "Normal, 31 PTEs/call: RW->RO");
    expect_counts(mprotect_counted(c, rw), {17, 2 * kN, 0, 0, 0}, "Normal, 31 PTEs/call: RO->RW");
    c.guest->config.batch_ptes = kDefaultBatchPtes;

    // The single-entry operations fall back too: xchg is get_and_clear + set.
    PteRef r;
    CHECK(as.pte_of(c, region(), r));
    const Snap a = snap(c);
    uint64_t old = 0, cur = 0;
    {
        PteLock l(c, r);
        CHECK(pte_read(c, r, cur));
        CHECK_EQ(ptep_xchg(c, l, cur ^ pte::AVL10, old), 0);
    }
    CHECK_EQ(snap(c).mmu_calls - a.mmu_calls, 2);
    CHECK_EQ(snap(c).req2 - a.req2, 0);
    CHECK_EQ(old & ~pte::AD, cur & ~pte::AD);
    CHECK_EQ(pte_at(c, as, region()) & ~pte::AD, (cur ^ pte::AVL10) & ~pte::AD);
    expect_access(rw, "after ptep_xchg");
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, region(), kN * kPageSize, rw), 0);
    for (unsigned i = 0; i < kN; ++i) CHECK(c.mem.store(page(region(), i), i));
    atomic_level(c);
    refused_at_use(c);
    normal_level(c);
}
