// nesting-and-huge-counts: multicalls that nest or name their own list, and
// batch counts far beyond the guest's arrays. Models the class of Xen
// advisories about hypercall argument counts and re-entry (unbounded
// recursion, reading past a guest array, continuations that lose or repeat
// work — XSA-45 for non-preemptible MMU work). The guest's arrays end at a
// page after which nothing is mapped; the counts say 2^31 - 1 or 2^32 - 1.
//   - multicall entry naming multicall (its own list, or a list of more
//     multicalls): that entry's result is -EINVAL, its list never runs, the
//     entries after it do;
//   - multicall, nr 2^32 - 1, 200 good entries then the unmapped page: the
//     200 run (across 3 continuation rounds), then -EFAULT;
//   - mmu_update, count 2^31 - 1 (and 2^32 - 1: bit 31 is the continuation
//     flag, so *pdone is where counting starts), a page of 256 requests: both
//     chunks of 128 applied, -EFAULT, done 256; the array starting 6 requests
//     into its page: the second chunk straddles the end, so done 128 and
//     requests 128.. are not applied (abi.md §3: done counts the requests
//     before the chunk that could not be read);
//   - mmuext_op, count 2^31 - 1, 85 ops (one chunk) ending at the page: -EFAULT,
//     done 85.
// Nothing past the stop point changes.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "nested and self-referencing multicalls, counts of 2^31 and 2^32 - 1: exact stops";
const TestConfig test_config = {.cpus = 1, .needs = needs::kFlagRange};

namespace {

constexpr unsigned kPages = 4;   // mapped at area(); the page after them is not
AddressSpace as;
TestL1 t;
uint64_t orig[kEntriesPerTable];

Va area() { return as.base() + 12 * level_span(Level::L2); }
Va area_end() { return area() + kPages * kPageSize; }
Va gva(unsigned i) { return rt::guest().va(t.gpfn(i)); }

void put_entry(Cpu& c, Va at, uint64_t op, std::initializer_list<uint64_t> args)
{
    CHECK(put_multicall_entry(c, at, op, args));
}

// Entries [first, first + n) of the test L1 hold orig | AVL10 exactly, the rest orig.
void check_changed(Cpu& c, unsigned first, unsigned n, const char* what)
{
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    unsigned wrong = 0;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const uint64_t want = i >= first && i < first + n ? orig[i] | pte::AVL10 : orig[i];
        wrong += (now[i] & ~pte::AD) != (want & ~pte::AD);
    }
    if (wrong) rt::fail("%s: %u entries not as expected", what, wrong);
    // Put them back for the next case.
    const Req r{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::AVL10, 0, kEntriesPerTable)};
    uint32_t done;
    CHECK_EQ(raw_mmu_update(c, &r, 1, done), 0);
}

void nesting(Cpu& c)
{
    const Va outer = area(), inner = area() + kPageSize;
    const long version = hypercall(c, __HYPERVISOR_xen_version, XENVER_version);
    // inner: a multicall of outer, then an update that must never run.
    put_entry(c, inner, __HYPERVISOR_multicall, {outer.v, 3});
    put_entry(c, inner + 64, __HYPERVISOR_update_va_mapping, {gva(0).v, orig[0] | pte::AVL10, 0});
    put_entry(c, outer, __HYPERVISOR_multicall, {outer.v, 3});   // its own list
    put_entry(c, outer + 64, __HYPERVISOR_multicall, {inner.v, 2});
    put_entry(c, outer + 128, __HYPERVISOR_xen_version, {XENVER_version});
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, outer.v, 3), 0);
    CHECK_EQ(multicall_result(c, outer), uint64_t(-XEN_EINVAL));
    CHECK_EQ(multicall_result(c, outer + 64), uint64_t(-XEN_EINVAL));
    CHECK_EQ(multicall_result(c, outer + 128), uint64_t(version));
    CHECK_EQ(multicall_result(c, inner), 0xbadbadbad);   // the nested list never ran
    CHECK_EQ(multicall_result(c, inner + 64), 0xbadbadbad);
    check_changed(c, 0, 0, "nested multicall");
}

void huge_multicall(Cpu& c)
{
    constexpr unsigned kGood = 200;   // 3 rounds of 64, then 8
    const Va list = area_end() - kGood * 64;
    for (unsigned i = 0; i < kGood; ++i)
        put_entry(c, list + i * 64, __HYPERVISOR_update_va_mapping, {gva(i).v, orig[i] | pte::AVL10, 0});
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, list.v, 0xffffffffu), -XEN_EFAULT);
    unsigned bad = 0;
    for (unsigned i = 0; i < kGood; ++i) bad += multicall_result(c, list + i * 64) != 0;
    CHECK_EQ(bad, 0);
    check_changed(c, 0, kGood, "multicall of 2^32 - 1");
    // A list that cannot be read at all: nothing runs.
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, area_end().v, 0xffffffffu), -XEN_EFAULT);
}

// n cmd-2 requests (entry i := orig | AVL10) at `at`; then the call with `count`.
void huge_mmu_update(Cpu& c, Va at, unsigned n, uint32_t count, uint32_t want_done, const char* what)
{
    for (unsigned i = 0; i < n; ++i)
        CHECK(c.mem.store(at + i * 16, ptr_of(c, t.ref(i), MMU_ATOMIC_PT_UPDATE)) &&
              c.mem.store(at + i * 16 + 8, orig[i] | pte::AVL10));
    const Va pdone = c.scratch_at(scratch::kDone);
    CHECK(c.mem.store(pdone, 0));   // a continuation (bit 31) counts on from here
    CHECK_EQ(hypercall(c, __HYPERVISOR_mmu_update, at.v, count, pdone.v, DOMID_SELF), -XEN_EFAULT);
    CHECK_EQ(load_or(c, pdone) & 0xffffffff, want_done);
    check_changed(c, 0, want_done, what);
}

void huge_mmuext(Cpu& c)
{
    constexpr unsigned kOps = 85;   // one chunk of 2 KiB
    const Va ops = area_end() - kOps * 24;
    for (unsigned i = 0; i < kOps; ++i) {
        const uint64_t op[3] = {MMUEXT_INVLPG_LOCAL, gva(i).v, 0};
        CHECK(put_words(c, ops + i * 24, op, sizeof(op)));
    }
    rt::PlatformCounters before, after;
    const bool counted = rt::platform_counters(c.id, before);
    const Va pdone = c.scratch_at(scratch::kDone);
    CHECK(c.mem.store(pdone, 0xdead));
    CHECK_EQ(hypercall(c, __HYPERVISOR_mmuext_op, ops.v, 0x7fffffffu, pdone.v, DOMID_SELF), -XEN_EFAULT);
    CHECK_EQ(load_or(c, pdone) & 0xffffffff, kOps);
    if (counted && rt::platform_counters(c.id, after)) CHECK_EQ(after.flush_page - before.flush_page, kOps);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));
    if (!setup_space(as)) return;
    CHECK_EQ(as.map_anon(c, area(), kPages * kPageSize, kProtRead | kProtWrite), 0);
    for (unsigned p = 0; p < kPages; ++p) CHECK(c.mem.store(area() + p * kPageSize, 0));
    uint64_t v;
    CHECK(!c.mem.load(area_end(), v));   // really nothing there

    nesting(c);
    huge_multicall(c);
    const Va last_page = area_end() - kPageSize;
    huge_mmu_update(c, last_page, 256, 0x7fffffffu, 256, "mmu_update of 2^31 - 1, page-aligned");
    huge_mmu_update(c, last_page, 256, 0xffffffffu, 256, "mmu_update of 2^32 - 1 (continuation bit)");
    huge_mmu_update(c, last_page + 6 * 16, 250, 0x7fffffffu, 128, "mmu_update of 2^31 - 1, chunk straddling");
    huge_mmuext(c);
}
