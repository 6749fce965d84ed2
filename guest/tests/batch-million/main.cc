// batch-million: one mmu_update of 10^6 requests whose last one is bad. Models
// the class of Xen advisories about long-running MMU hypercalls (XSA-45:
// page-table operations that were not preemptible) and their continuations: the
// hypervisor must not hold the CPU for the whole batch, so it preempts it ~244
// times (budget 4096 units) and continues it transparently — and across all of
// those pieces the guest must see Xen's batch semantics exactly: one call, the
// bad request's errno, *done = 999 999, every earlier request applied, the bad
// one not. The same again as the one entry of a multicall (preempted with it,
// its arguments rewritten in the list). A later legitimate batch on the same
// table still works.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "10^6-request mmu_update, bad last entry: preempted, continued, done exact";
const TestConfig test_config = {.cpus = 1, .frames = 8192, .needs = needs::kFlagRange | needs::kPvmmuOp};

namespace {

constexpr unsigned kRequests = 1'000'000;
constexpr unsigned kPassBits = 7;   // bits 58:52 (AVL_HI): which pass over the table wrote an entry

TestL1 t;
uint64_t orig[kEntriesPerTable];

// Request j rewrites entry j % 512 with its pass number in AVL_HI, so the value
// an entry ends with names the last request applied to it.
uint64_t good_val(unsigned j)
{
    return orig[j % kEntriesPerTable] | (uint64_t((1 + j / kEntriesPerTable) % (1u << kPassBits)) << 52);
}

// Every entry holds the last request below `last` that names it (the bad entry
// what the request before it wrote, not the hypervisor frame); then the table
// takes a legitimate batch that puts every entry back.
void check_applied_and_restore(Cpu& c, const char* how)
{
    constexpr unsigned last = kRequests - 1;
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    unsigned wrong = 0;
    for (unsigned e = 0; e < kEntriesPerTable; ++e) {
        const unsigned j = last - 1 - (last - 1 - e) % kEntriesPerTable;
        wrong += (now[e] & ~pte::AD) != (good_val(j) & ~pte::AD);
    }
    if (wrong) rt::fail("%s: %u entries not as the requests before the bad one left them", how, wrong);
    const Req restore{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE),
                      pvmmu::abi::encode_flag_range(pte::AVL_HI, 0, kEntriesPerTable)};
    uint32_t done = 0;
    CHECK_EQ(raw_mmu_update(c, &restore, 1, done), 0);
    CHECK(read_table(c, t.table, now));
    CHECK_EQ(table_diff(orig, now, true), 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));
    Gpfn buf;
    constexpr unsigned kPages = unsigned((uint64_t(kRequests) * 16 + kPageSize - 1) / kPageSize) + 1;   // + a multicall entry
    if (!c.guest->frames().alloc(c, kPages, buf)) return rt::error("no room for %u request pages", kPages);
    const Va reqs = c.guest->va(buf), list = c.guest->va(Gpfn{buf.v + kPages - 1});

    // The bad last request maps a hypervisor frame into the entry it names.
    const unsigned last = kRequests - 1;
    for (unsigned j = 0; j < kRequests; ++j) {
        const uint64_t ptr = ptr_of(c, t.ref(j % kEntriesPerTable), MMU_ATOMIC_PT_UPDATE);
        const uint64_t val = j == last ? make_pte(rt::hypervisor_frame(), pte::P | pte::US) : good_val(j);
        if (!c.mem.store(reqs + uint64_t(j) * 16, ptr) || !c.mem.store(reqs + uint64_t(j) * 16 + 8, val))
            return rt::error("cannot write request %u", j);
    }
    const Va pdone = c.scratch_at(scratch::kDone);
    CHECK(c.mem.store(pdone, 0xdead));
    const uint64_t calls = c.stats.hypercalls.get();
    CHECK_EQ(hypercall(c, __HYPERVISOR_mmu_update, reqs.v, kRequests, pdone.v, DOMID_SELF), -XEN_EPERM);
    CHECK_EQ(c.stats.hypercalls.get() - calls, 1);   // the continuations are the hypervisor's
    const uint64_t done_all = load_or(c, pdone) & 0xffffffff;
    CHECK_EQ(done_all, last);
    check_applied_and_restore(c, "mmu_update");

    // The same batch as the one entry of a multicall: the entry is preempted
    // with it (its arguments rewritten in the list) and its result is exact.
    CHECK(put_multicall_entry(c, list, __HYPERVISOR_mmu_update, {reqs.v, kRequests, pdone.v, DOMID_SELF}));
    CHECK(c.mem.store(pdone, 0xdead));
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, list.v, 1), 0);
    CHECK_EQ(multicall_result(c, list), uint64_t(-XEN_EPERM));
    CHECK_EQ(load_or(c, pdone) & 0xffffffff, last);
    check_applied_and_restore(c, "multicall");

    c.guest->frames().free(c, buf, kPages);
    rt::print("%u requests in one call: done %llu", kRequests, (unsigned long long)done_all);
}
