// Helpers shared by the guest tests: an address space every vCPU has entered,
// access probes, raw request arrays with exact `done` counts, attacks on one
// entry that must leave it untouched, multicall entries, and counter
// snapshots. Guest code only: the library and the runtime, no platform headers.
#pragma once

#include <initializer_list>

#include "guest/address_space.h"
#include "guest/mmu_batch.h"
#include "guest/hypercalls.h"
#include "guest/pagetable.h"
#include "guest/pte_ops.h"
#include "guest/test.h"

namespace pvmmu::guest::testing {

// Tests build their address space in L4 slot 2 (the physmap is slot 1).
inline constexpr unsigned kSlot = 2;

// Creates `as` and has every vCPU enter it. false (after an ERROR) on failure.
inline bool setup_space(AddressSpace& as)
{
    Cpu& c = rt::this_cpu();
    if (int rc = as.create(c, kSlot)) {
        rt::error("AddressSpace::create: %d", rc);
        return false;
    }
    rt::on_all([&](Cpu& v) { as.enter(v); });
    return true;
}

// One page of `as` mapped read-write and written (which builds the L2 and L1
// around it), and those two tables: what attacks on a live tree aim at.
struct LivePage {
    Va va{0};
    Gpfn l2{0}, l1{0};
};
inline bool map_live_page(Cpu& c, AddressSpace& as, Va va, uint64_t val, LivePage& out)
{
    PteRef r;
    out.va = va;
    if (as.map_anon(c, va, kPageSize, kProtRead | kProtWrite) || !c.mem.store(va, val) || !as.pte_of(c, va, r) ||
        !pt_child(c, as.root(), table_index(va, Level::L3), out.l2)) {
        rt::error("cannot map a live page at %#llx", (unsigned long long)va.v);
        return false;
    }
    out.l1 = r.table;
    return true;
}

// The page at index i of a region.
inline Va page(Va base, uint64_t i) { return base + i * kPageSize; }

// Whether an access succeeds (after the fault handler had its say).
inline bool can_read(Cpu& c, Va va)
{
    uint64_t v;
    return c.mem.load(va, v);
}
inline bool can_write(Cpu& c, Va va, uint64_t val) { return c.mem.store(va, val); }

inline uint64_t load_or(Cpu& c, Va va, uint64_t dflt = ~0ull)
{
    uint64_t v;
    return c.mem.load(va, v) ? v : dflt;
}

// The entry that maps va in `as`, or ~0 when no L1 covers it.
inline uint64_t pte_at(Cpu& c, AddressSpace& as, Va va)
{
    PteRef r;
    uint64_t e;
    return as.pte_of(c, va, r) && pte_read(c, r, e) ? e : ~0ull;
}

struct Req {
    uint64_t ptr, val;
};

// An mmu_update of exactly these requests (from the scratch pages).
inline long raw_mmu_update(Cpu& c, const Req* reqs, unsigned n, uint32_t& done, unsigned domid = DOMID_SELF)
{
    for (unsigned i = 0; i < n; ++i)
        if (!put_mmu_req(c, i, reqs[i].ptr, reqs[i].val)) return -XEN_EFAULT;
    if (!c.mem.store(c.scratch_at(scratch::kDone), 0xdead)) return -XEN_EFAULT;
    return mmu_update_scratch(c, n, &done, domid);
}

// Writes a multicall_entry_t at `at`: op, a result of 0xbadbadbad (so an entry
// that never ran shows), then the arguments.
inline bool put_multicall_entry(Cpu& c, Va at, uint64_t op, std::initializer_list<uint64_t> args)
{
    uint64_t e[8] = {op, 0xbadbadbad, 0, 0, 0, 0, 0, 0};
    unsigned k = 2;
    for (uint64_t a : args)
        if (k < 8) e[k++] = a;
    return put_words(c, at, e, sizeof(e));
}
inline uint64_t multicall_result(Cpu& c, Va entry) { return load_or(c, entry + 8); }

// Machine address of the entry `r`, with a command.
inline uint64_t ptr_of(Cpu& c, PteRef r, unsigned cmd) { return pte_maddr(*c.guest, r).v | cmd; }

// The outcome of an attack on entry `r`, which held `before`: the call must
// have returned `want` and the entry must be exactly as it was. A FAILURE
// naming `what` otherwise.
inline void expect_untouched(Cpu& c, PteRef r, uint64_t before, long rc, long want, const char* what)
{
    uint64_t after = ~0ull;
    if (!pte_read(c, r, after) || rc != want || after != before)
        rt::fail("%s: rc %ld (want %ld), entry %#llx -> %#llx", what, rc, want, (unsigned long long)before,
                 (unsigned long long)after);
}

// One mmu_update request aimed at entry `r` (usually `req.ptr` names it) that
// must be refused with `want`: done 0 and the entry unchanged.
inline void attack_entry(Cpu& c, PteRef r, const Req& req, long want, const char* what, unsigned domid = DOMID_SELF)
{
    uint64_t before = ~0ull;
    CHECK(pte_read(c, r, before));
    uint32_t done = 99;
    expect_untouched(c, r, before, raw_mmu_update(c, &req, 1, done, domid), want, what);
    if (done != 0) rt::fail("%s: done %u (want 0)", what, done);
}

// The errno of a refused writable mapping of a frame that is a page table:
// pvmmu's -EINVAL for every page-type conflict; Xen 4.17 says -EBUSY when the
// conflict is a new writable mapping (its reference taken for an L1 entry) and
// -EINVAL when a frame mapped writable is to become a table (abi.md §11).
inline long writable_table_map_errno() { return rt::pvmmu_op_available() ? -XEN_EINVAL : -XEN_EBUSY; }

// The counters of one vCPU that tests compare, copied.
struct Snap {
    uint64_t faults, spurious, spurious_write, spurious_read, demand_zero, denied;
    uint64_t flush_local, flush_remote, invlpg_pages, cleans, hypercalls, mmu_calls, mmuext_calls;
    uint64_t req0, req2, req4;
};
inline Snap snap(const Cpu& c)
{
    const CpuStats& s = c.stats;
    return Snap{s.faults.get(),       s.spurious.get(),     s.spurious_write.get(), s.spurious_read.get(),
                s.demand_zero.get(),  s.denied.get(),       s.flush_local.get(),    s.flush_remote.get(),
                s.invlpg_pages.get(), s.cleans.get(),       s.hypercalls.get(),     s.mmu_update_calls.get(),
                s.mmuext_calls.get(), s.req[0].get(),       s.req[2].get(),         s.req[4].get()};
}

} // namespace pvmmu::guest::testing

namespace pvmmu::guest::testing {

// A physmap L1 whose 512 frames the test owns (taken out of the allocator), so
// raw requests on its entries touch nothing the library or runtime uses. The
// builder mapped them P|RW|US|A.
struct TestL1 {
    Gpfn first{0};   // the first gpfn it maps (512-aligned)
    Gpfn table{0};   // the physmap L1 itself

    PteRef ref(unsigned i) const { return PteRef{table, i}; }
    Gpfn gpfn(unsigned i) const { return Gpfn{first.v + i}; }
};

// The last full L1 of the physmap. false (after an ERROR) if it is not free.
inline bool reserve_test_l1(Cpu& c, TestL1& out)
{
    const uint64_t k = c.guest->boot().nr_frames / kEntriesPerTable - 1;
    out.first = Gpfn{k * kEntriesPerTable};
    out.table = c.guest->physmap_pte(out.first).table;
    if (!c.guest->frames().reserve(c, out.first, kEntriesPerTable)) {
        rt::error("cannot reserve gpfns %llu..+512", (unsigned long long)out.first.v);
        return false;
    }
    return true;
}

// Clears `bits` on the present entries [first, first + n) of the L1 `l1`,
// whose pages nothing accesses meanwhile: one cmd-4 request where the
// hypervisor has it, else a cmd-0 rewrite of each entry (Xen).
inline void clear_entry_bits(Cpu& c, Gpfn l1, unsigned first, unsigned n, uint64_t bits)
{
    const bool range = rt::offers(needs::kFlagRange);
    SpinGuard g(c, c.guest->pte_lock(l1));
    MmuBatch b(c, l1, range ? 1 : n);
    if (range) CHECK_EQ(b.add_range(first, bits, 0, n), 0);
    for (unsigned i = first; !range && i < first + n; ++i) {
        uint64_t e = 0;
        if (CHECK(pte_read(c, PteRef{l1, i}, e)) && pte_present(e)) CHECK_EQ(b.add(MMU_NORMAL_PT_UPDATE, i, e & ~bits), 0);
    }
    CHECK_EQ(b.flush(), 0);
}

// All 512 entries of a table, read through the physmap.
inline bool read_table(Cpu& c, Gpfn table, uint64_t* out)
{
    for (unsigned i = 0; i < kEntriesPerTable; ++i)
        if (!pte_read(c, PteRef{table, i}, out[i])) return false;
    return true;
}

// Entries that differ between two readings (ignoring A/D, which hardware may set
// at any time, when ignore_ad).
inline unsigned table_diff(const uint64_t* a, const uint64_t* b, bool ignore_ad = false)
{
    unsigned n = 0;
    const uint64_t m = ignore_ad ? ~pte::AD : ~0ull;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) n += ((a[i] ^ b[i]) & m) != 0;
    return n;
}

} // namespace pvmmu::guest::testing
