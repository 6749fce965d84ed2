// cmd-unknown: mmu_update commands neither pvmmu nor Xen implements — 5, 6, 7 —
// fail with -ENOSYS as the first failing request of their batch: the requests
// before them are done, they and the ones after are not, and *done says exactly
// that. Command 3 is Xen's MMU_PT_UPDATE_NO_TRANSLATE ("val is not translated"),
// which for a PV guest is command 0 (Xen 4.17 takes it so; abi.md §4.4): in the
// same batches it is done like its neighbours.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "mmu_update commands 5, 6, 7: -ENOSYS, done count exact; 3 is command 0";
const TestConfig test_config = {.cpus = 1};

namespace {

TestL1 t;

void batch(Cpu& c, unsigned cmd, unsigned at)
{
    // Three requests on entries 0, 1, 2; the one at `at` has the unknown command
    // but an otherwise valid cmd-2 value.
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    Req reqs[3];
    for (unsigned i = 0; i < 3; ++i)
        reqs[i] = Req{ptr_of(c, t.ref(i), i == at ? cmd : MMU_ATOMIC_PT_UPDATE), before[i] ^ pte::AVL10};
    uint32_t done = 99;
    CHECK_EQ(raw_mmu_update(c, reqs, 3, done), -XEN_ENOSYS);
    CHECK_EQ(done, at);
    CHECK(read_table(c, t.table, after));
    CHECK_EQ(table_diff(before, after), at);
    for (unsigned i = 0; i < 3; ++i) CHECK_EQ(after[i], i < at ? before[i] ^ pte::AVL10 : before[i]);
    // Put the done ones back.
    for (unsigned i = 0; i < at; ++i) {
        PteLock l(c, t.ref(i));
        uint64_t old;
        CHECK_EQ(ptep_xchg(c, l, before[i], old), 0);
    }
}

// The same batch with cmd 3 at `at`: all three done, the entry at `at` as cmd 0
// would store it.
void batch_no_translate(Cpu& c, unsigned at)
{
    uint64_t before[kEntriesPerTable], after[kEntriesPerTable];
    CHECK(read_table(c, t.table, before));
    Req reqs[3];
    for (unsigned i = 0; i < 3; ++i)
        reqs[i] = Req{ptr_of(c, t.ref(i), i == at ? MMU_PT_UPDATE_NO_TRANSLATE : MMU_ATOMIC_PT_UPDATE),
                      before[i] ^ pte::AVL10};
    uint32_t done = 99;
    CHECK_EQ(raw_mmu_update(c, reqs, 3, done), 0);
    CHECK_EQ(done, 3);
    CHECK(read_table(c, t.table, after));
    CHECK_EQ(table_diff(before, after), 3);
    for (unsigned i = 0; i < 3; ++i) CHECK_EQ(after[i] & ~pte::AD, (before[i] ^ pte::AVL10) & ~pte::AD);
    for (unsigned i = 0; i < 3; ++i) {
        PteLock l(c, t.ref(i));
        uint64_t old;
        CHECK_EQ(ptep_xchg(c, l, before[i], old), 0);
    }
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (!reserve_test_l1(c, t)) return;
    for (unsigned cmd : {5u, 6u, 7u})
        for (unsigned at = 0; at < 3; ++at) batch(c, cmd, at);
    for (unsigned at = 0; at < 3; ++at) batch_no_translate(c, at);
    CHECK_EQ(c.stats.req[5].get() + c.stats.req[6].get() + c.stats.req[7].get(), 0);
}
