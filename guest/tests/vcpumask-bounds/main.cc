// vcpumask-bounds: vCPU bitmaps naming vCPUs the domain does not have. Models
// the class of Xen advisories where a guest-controlled index or mask reached
// past the domain's vCPUs (out-of-bounds vCPU lookups, here through the mask
// code behind MMUEXT_*_MULTI and UVMF_MULTI). A bitmap bit is a vCPU number of the
// caller's domain; this domain has N vCPUs and the second domain's vCPU runs
// on the physical CPU right after them, so bit N names "a CPU that exists but
// is not ours". pvmmu refuses any bit at or above N (abi.md §5, §6: -EINVAL,
// Xen ignores them), before doing anything: for TLB_FLUSH_MULTI, INVLPG_MULTI
// and update_va_mapping with a bitmap no CPU is flushed, no entry changes; in
// an mmuext batch the operation before is done, done is exact. An unreadable
// bitmap is -EINVAL to mmuext_op and -EFAULT to update_va_mapping, as Xen
// 4.17 answers them. A legitimate bitmap still flushes exactly its vCPUs.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "vCPU bitmaps naming absent or foreign vCPUs are refused, nothing flushed";
const TestConfig test_config = {.cpus = 2, .second_domain = true, .needs = needs::kPvmmuOp};

namespace {

TestL1 t;

bool counted = false;   // whether the platform counts flushes (the sim does)

// The flush counters of vCPUs 0 and 1 (zero where the platform cannot tell).
struct Counts {
    rt::PlatformCounters v[2];
};

Counts counts()
{
    Counts k{};
    for (unsigned i = 0; i < 2 && i < rt::nr_vcpus(); ++i) counted = rt::platform_counters(i, k.v[i]);
    return k;
}

bool same(const rt::PlatformCounters& a, const rt::PlatformCounters& b)
{
    return a.flush_all == b.flush_all && a.flush_page == b.flush_page && a.shootdowns_sent == b.shootdowns_sent &&
           a.shootdowns_served == b.shootdowns_served;
}

// No CPU of the domain flushed or was sent anything since `before`.
void nothing_flushed(const Counts& before, const char* what)
{
    const Counts now = counts();
    for (unsigned i = 0; i < 2 && i < rt::nr_vcpus(); ++i)
        if (!same(before.v[i], now.v[i])) rt::fail("%s: vCPU %u's TLB was flushed", what, i);
}

// One bitmap through every path that takes one.
void refused_mask(Cpu& c, uint64_t mask, long want, const char* what)
{
    Va at{0};
    CHECK(put_vcpumask(c, mask, at));
    const Counts before = counts();
    const Va page = c.guest->va(t.gpfn(0));
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_MULTI, 0, at.v), want);
    CHECK_EQ(mmuext_one(c, MMUEXT_INVLPG_MULTI, page.v, at.v), want);
    uint64_t e = 0;
    CHECK(pte_read(c, t.ref(0), e));
    for (unsigned type : {UVMF_TLB_FLUSH, UVMF_INVLPG})
        expect_untouched(c, t.ref(0), e,
                         hypercall(c, __HYPERVISOR_update_va_mapping, page.v, e | pte::AVL10, type | at.v), want, what);
    nothing_flushed(before, what);
}

// A batch: a good flush, then one with a bad bitmap, then another good one.
void in_batch(Cpu& c, uint64_t bad)
{
    Va good{0};
    CHECK(put_vcpumask(c, 1, good));
    const Va bad_at = c.scratch_at(scratch::kWord);
    CHECK(c.mem.store(bad_at, bad));
    CHECK(put_mmuext(c, 0, MMUEXT_TLB_FLUSH_MULTI, 0, good.v));
    CHECK(put_mmuext(c, 1, MMUEXT_TLB_FLUSH_MULTI, 0, bad_at.v));
    CHECK(put_mmuext(c, 2, MMUEXT_TLB_FLUSH_MULTI, 0, good.v));
    const Counts before = counts();
    uint32_t done = 99;
    CHECK_EQ(mmuext_scratch(c, 3, &done), -XEN_EINVAL);
    CHECK_EQ(done, 1);
    CHECK_EQ(counts().v[0].flush_all - before.v[0].flush_all, counted ? 1 : 0);   // only the first operation flushed
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    const unsigned n = rt::nr_vcpus();
    if (n >= 64) return rt::skip("no absent vCPU number below 64");
    const uint64_t ours = (1ull << n) - 1;

    const struct {
        uint64_t mask;
        const char* what;
    } bad[] = {
        {1ull << n, "the next vCPU number (the second domain's CPU)"},
        {(1ull << n) | 1, "vCPU 0 and an absent one"},
        {ours | (1ull << n), "all ours and one more"},
        {1ull << 63, "bit 63"},
        {~0ull, "every bit"},
        {~ours, "every absent vCPU"},
    };
    for (const auto& b : bad) {
        refused_mask(c, b.mask, -XEN_EINVAL, b.what);
        in_batch(c, b.mask);
    }

    // A bitmap the hypervisor cannot read: -EINVAL (mmuext_op) or -EFAULT
    // (update_va_mapping), nothing done.
    const Va unreadable{0xffff'8000'0000'0000ull};
    const Counts before = counts();
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_MULTI, 0, unreadable.v), -XEN_EINVAL);
    CHECK_EQ(mmuext_one(c, MMUEXT_INVLPG_MULTI, c.guest->va(t.gpfn(0)).v, unreadable.v), -XEN_EINVAL);
    uint64_t e = 0;
    CHECK(pte_read(c, t.ref(0), e));
    expect_untouched(c, t.ref(0), e,
                     hypercall(c, __HYPERVISOR_update_va_mapping, c.guest->va(t.gpfn(0)).v, e | pte::AVL10,
                               UVMF_TLB_FLUSH | unreadable.v),
                     -XEN_EFAULT, "unreadable bitmap");
    nothing_flushed(before, "unreadable bitmap");

    // The legitimate bitmap of the last vCPU flushes it and only it.
    Va at{0};
    CHECK(put_vcpumask(c, 1ull << (n - 1), at));
    rt::PlatformCounters b0, b1, a0, a1;
    counted = rt::platform_counters(0, b0) && rt::platform_counters(n - 1, b1);
    CHECK_EQ(mmuext_one(c, MMUEXT_TLB_FLUSH_MULTI, 0, at.v), 0);
    if (!counted || !rt::platform_counters(0, a0) || !rt::platform_counters(n - 1, a1)) return;
    CHECK_EQ(a1.flush_all - b1.flush_all, 1);
    if (n > 1) CHECK_EQ(a0.flush_all - b0.flush_all, 0);
}
