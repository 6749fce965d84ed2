// batch-million: one mmu_update of 10^6 requests whose last one is bad. Models
// the class of Xen advisories about long-running MMU hypercalls (XSA-45:
// page-table operations that were not preemptible) and their continuations: the
// hypervisor must not hold the CPU for the whole batch, so it preempts it ~244
// times (budget 4096 units) and continues it transparently — and across all of
// those pieces the guest must see Xen's batch semantics exactly: one call, the
// bad request's errno, *done = 999 999, every earlier request applied, the bad
// one not. A later legitimate batch on the same table still works.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "10^6-request mmu_update, bad last entry: preempted, continued, done exact";
const TestConfig test_config = {.cpus = 1, .frames = 8192};

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

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));
    Gpfn buf;
    constexpr uint64_t kPages = (uint64_t(kRequests) * 16 + kPageSize - 1) / kPageSize;
    if (!c.guest->frames().alloc(c, unsigned(kPages), buf)) return rt::error("no room for %llu request pages", (unsigned long long)kPages);
    const Va reqs = c.guest->va(buf);

    // The bad last request maps a hypervisor frame into the entry it names.
    const unsigned last = kRequests - 1, bad_entry = last % kEntriesPerTable;
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

    // Every entry holds the last request below `last` that names it; the bad
    // entry holds what the request before it wrote, not the hypervisor frame.
    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    unsigned wrong = 0;
    for (unsigned e = 0; e < kEntriesPerTable; ++e) {
        const unsigned j = last - 1 - (last - 1 - e) % kEntriesPerTable;
        if (e == bad_entry) CHECK_EQ(pte_mfn(now[e]).v, c.guest->mfn(t.gpfn(e)).v);
        wrong += (now[e] & ~pte::AD) != (good_val(j) & ~pte::AD);
    }
    CHECK_EQ(wrong, 0);

    // The table still takes a legitimate batch: put every entry back.
    const Req restore{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE),
                      pvmmu::abi::encode_flag_range(pte::AVL_HI, 0, kEntriesPerTable)};
    uint32_t done = 0;
    CHECK_EQ(raw_mmu_update(c, &restore, 1, done), 0);
    CHECK(read_table(c, t.table, now));
    CHECK_EQ(table_diff(orig, now, true), 0);
    c.guest->frames().free(c, buf, unsigned(kPages));
    rt::print("%u requests in one call: done %llu", kRequests, (unsigned long long)done_all);
}
