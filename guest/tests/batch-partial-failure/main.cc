// batch-partial-failure: an mmu_update batch with a bad request in the middle.
// Xen's semantics (docs/design.md §3): requests are done in order, the first failure stops
// the batch, *done counts the requests completed, the failing request changes
// nothing — so everything before it is applied and everything after untouched.
// Checked for several kinds of bad request, at chunk edges (the hypervisor
// copies 64 requests at a time) and across a preempted and continued batch.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "mmu_update batch with a bad request: earlier applied, later untouched, done exact";
const TestConfig test_config = {.cpus = 1, .frames = 8192, .needs = needs::kFlagRange | needs::kPvmmuOp};

namespace {

TestL1 t;
uint64_t orig[kEntriesPerTable];

// The bad requests and what they fail with.
struct Bad {
    const char* what;
    long rc;
    Req (*make)(Cpu& c, unsigned i);
};
const Bad kBad[] = {
    {"maps a hypervisor frame", -XEN_EPERM,
     [](Cpu& c, unsigned i) { return Req{ptr_of(c, t.ref(i), MMU_ATOMIC_PT_UPDATE), make_pte(rt::hypervisor_frame(), pte::P | pte::US)}; }},
    // (A data frame of the guest's own is no bad ptr: Xen stores the value
    // there, docs/abi.md §4.1.)
    {"ptr is the hypervisor's frame", -XEN_EINVAL,
     [](Cpu&, unsigned i) { return Req{(maddr_of(rt::hypervisor_frame()).v + i * 8) | MMU_ATOMIC_PT_UPDATE, orig[i]}; }},
    {"cache attribute", -XEN_EINVAL,
     [](Cpu& c, unsigned i) { return Req{ptr_of(c, t.ref(i), MMU_ATOMIC_PT_UPDATE), orig[i] | pte::PCD}; }},
    {"maps a page table writable", -XEN_EINVAL,
     [](Cpu& c, unsigned i) { return Req{ptr_of(c, t.ref(i), MMU_NORMAL_PT_UPDATE), make_pte(c.guest->mfn(Gpfn{0}), pte::P | pte::RW | pte::US)}; }},
};

// Request j sets entry j % 512 to its original value with a pass number in
// bits 52..58, so the value an entry ends with names the last request applied.
uint64_t good_val(unsigned j) { return orig[j % kEntriesPerTable] | (uint64_t(1 + j / kEntriesPerTable) << 52); }

void restore(Cpu& c)
{
    const Req r{ptr_of(c, t.ref(0), MMU_FLAG_RANGE_UPDATE), pvmmu::abi::encode_flag_range(pte::AVL_HI, 0, kEntriesPerTable)};
    uint32_t done;
    CHECK_EQ(raw_mmu_update(c, &r, 1, done), 0);
}

// n requests in guest memory at `buf`, the one at k bad; checks the outcome.
void run(Cpu& c, Va buf, unsigned n, unsigned k, const Bad& bad)
{
    for (unsigned j = 0; j < n; ++j) {
        const Req r = j == k ? bad.make(c, j % kEntriesPerTable)
                             : Req{ptr_of(c, t.ref(j % kEntriesPerTable), MMU_ATOMIC_PT_UPDATE), good_val(j)};
        CHECK(c.mem.store(buf + j * 16, r.ptr) && c.mem.store(buf + j * 16 + 8, r.val));
    }
    const Va pdone = c.scratch_at(scratch::kDone);
    CHECK(c.mem.store(pdone, 0xdead));
    const long rc = hypercall(c, __HYPERVISOR_mmu_update, buf.v, n, pdone.v, DOMID_SELF);
    const uint64_t done = load_or(c, pdone) & 0xffffffff;

    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    unsigned wrong = 0;
    for (unsigned e = 0; e < kEntriesPerTable; ++e) {
        // The last request below k that names e, if any.
        uint64_t want = orig[e];
        for (unsigned j = e; j < k; j += kEntriesPerTable) want = good_val(j);
        wrong += now[e] != want;
    }
    if (rc != bad.rc || done != k || wrong)
        rt::fail("%s at %u of %u: rc %ld (want %ld), done %llu (want %u), %u entries wrong", bad.what, k, n, rc,
                 bad.rc, (unsigned long long)done, k, wrong);
    restore(c);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));

    // Short batches from the scratch pages: edges of the 64-request chunks.
    for (const Bad& bad : kBad)
        for (unsigned k : {0u, 1u, 63u, 64u, 65u, 150u, 299u}) run(c, c.scratch, 300, k, bad);

    // A batch longer than the hypervisor's preemption budget (4096 PTEs): it is
    // preempted and continued, and done still counts across the pieces.
    constexpr unsigned kLong = 5000;
    Gpfn buf;
    if (!c.guest->frames().alloc(c, (kLong * 16 + kPageSize - 1) / kPageSize, buf)) return rt::error("no buffer");
    for (unsigned k : {4095u, 4096u, 4500u, 4999u}) run(c, c.guest->va(buf), kLong, k, kBad[0]);
}
