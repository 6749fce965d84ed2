// multicall-batch: one multicall mixing update_va_mapping, mmu_update (whole
// request arrays, one of them failing half-way), mmuext_op, xen_version, an
// unknown hypercall and a nested multicall. Xen's semantics: every entry runs,
// failures do not stop the list, each entry's result is its own hypercall's
// return value, and the effects are exactly those of the entries that
// succeeded (the failing mmu_update's *done included). A list longer than the
// hypervisor's per-round limit (64 entries) is continued and still exact.
#include "guest/tlb.h"
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "one multicall mixing update_va_mapping and mmu_update: per-entry results exact";
const TestConfig test_config = {.cpus = 1, .needs = needs::kPvmmuOp};

namespace {

TestL1 t;
uint64_t orig[kEntriesPerTable];

// The test's own guest pages: entry list, request arrays, pdone words.
Va list, reqs_a, reqs_b, reqs_c, done_words;

Va gva(unsigned i) { return rt::guest().va(t.gpfn(i)); }

void put_entry(Cpu& c, unsigned i, uint64_t op, std::initializer_list<uint64_t> args)
{
    CHECK(put_multicall_entry(c, list + i * 64, op, args));
}

void put_reqs(Cpu& c, Va at, std::initializer_list<Req> rs)
{
    unsigned k = 0;
    for (const Req& r : rs) {
        CHECK(c.mem.store(at + k * 16, r.ptr) && c.mem.store(at + k * 16 + 8, r.val));
        ++k;
    }
}

uint64_t req2(Cpu& c, unsigned i) { return ptr_of(c, t.ref(i), MMU_ATOMIC_PT_UPDATE); }

void mixed(Cpu& c)
{
    const uint64_t bad_map = make_pte(rt::hypervisor_frame(), pte::P | pte::US);
    put_reqs(c, reqs_a, {{req2(c, 1), orig[1] | pte::AVL10}, {req2(c, 2), orig[2] | pte::AVL10}, {req2(c, 3), orig[3] | pte::AVL10}});
    put_reqs(c, reqs_b, {{req2(c, 4), orig[4] | pte::AVL10}, {req2(c, 5), bad_map}, {req2(c, 6), orig[6] | pte::AVL10}});
    put_reqs(c, reqs_c, {{ptr_of(c, t.ref(8), 5), orig[8] | pte::AVL10}});
    for (unsigned k = 0; k < 3; ++k) CHECK(c.mem.store(done_words + 8 * k, 0xdead));
    CHECK(put_mmuext(c, 0, MMUEXT_INVLPG_LOCAL, gva(0).v, 0));

    const long version = hypercall(c, __HYPERVISOR_xen_version, XENVER_version);
    struct Want {
        long rc;
    };
    const Want want[] = {{0}, {0}, {-XEN_EINVAL}, {-XEN_EPERM}, {-XEN_EPERM}, {0}, {-XEN_EINVAL}, {version}, {-XEN_ENOSYS}, {-XEN_ENOSYS}};
    put_entry(c, 0, __HYPERVISOR_update_va_mapping, {gva(0).v, orig[0] | pte::AVL10, UVMF_INVLPG | UVMF_LOCAL});
    put_entry(c, 1, __HYPERVISOR_mmu_update, {reqs_a.v, 3, done_words.v, DOMID_SELF});
    put_entry(c, 2, __HYPERVISOR_update_va_mapping, {0x8000'0000'0000'0000ull, orig[0], 0});   // not canonical
    put_entry(c, 3, __HYPERVISOR_mmu_update, {reqs_b.v, 3, done_words.v + 8, DOMID_SELF});
    put_entry(c, 4, __HYPERVISOR_update_va_mapping, {gva(7).v, bad_map, 0});
    put_entry(c, 5, __HYPERVISOR_mmuext_op, {c.scratch_at(scratch::kOps).v, 1, 0, DOMID_SELF});
    put_entry(c, 6, __HYPERVISOR_multicall, {list.v, 1});
    put_entry(c, 7, __HYPERVISOR_xen_version, {XENVER_version});
    put_entry(c, 8, 63, {});
    put_entry(c, 9, __HYPERVISOR_mmu_update, {reqs_c.v, 1, done_words.v + 16, DOMID_SELF});

    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, list.v, 10), 0);
    for (unsigned i = 0; i < 10; ++i) {
        const long got = long(load_or(c, list + i * 64 + 8));
        if (got != want[i].rc) rt::fail("entry %u: result %ld, want %ld", i, got, want[i].rc);
    }
    CHECK_EQ(load_or(c, done_words) & 0xffffffff, 3);
    CHECK_EQ(load_or(c, done_words + 8) & 0xffffffff, 1);
    CHECK_EQ(load_or(c, done_words + 16) & 0xffffffff, 0);

    uint64_t now[kEntriesPerTable];
    CHECK(read_table(c, t.table, now));
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const bool changed = i <= 4;   // entry 0 by update_va_mapping, 1-3 by array A, 4 by array B
        const uint64_t w = changed ? orig[i] | pte::AVL10 : orig[i];
        if ((now[i] & ~pte::AD) != (w & ~pte::AD))
            rt::fail("entry %u: %#llx, want %#llx", i, (unsigned long long)now[i], (unsigned long long)w);
    }
}

// 100 update_va_mapping entries: two continuation rounds, every result 0.
void long_list(Cpu& c)
{
    constexpr unsigned kLong = 100;
    for (unsigned i = 0; i < kLong; ++i)
        put_entry(c, i, __HYPERVISOR_update_va_mapping, {gva(16 + i).v, orig[16 + i] | pte::AVL11, 0});
    CHECK_EQ(hypercall(c, __HYPERVISOR_multicall, list.v, kLong), 0);
    unsigned bad = 0;
    for (unsigned i = 0; i < kLong; ++i) {
        bad += load_or(c, list + i * 64 + 8) != 0;
        uint64_t e = 0;
        CHECK(pte_read(c, t.ref(16 + i), e));
        bad += (e & ~pte::AD) != ((orig[16 + i] | pte::AVL11) & ~pte::AD);
    }
    CHECK_EQ(bad, 0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    CHECK(read_table(c, t.table, orig));
    Gpfn pages;
    if (!c.guest->frames().alloc(c, 4, pages)) return rt::error("no pages");
    list = c.guest->va(pages);   // two pages: up to 128 entries
    reqs_a = c.guest->va(Gpfn{pages.v + 2});
    reqs_b = reqs_a + 256;
    reqs_c = reqs_a + 512;
    done_words = c.guest->va(Gpfn{pages.v + 3});
    mixed(c);
    long_list(c);
}
