// spurious-fault-fixup: raises are never flushed preventively (seed 004), so a
// vCPU can hold a TLB entry older than the raise. Its next access faults; the
// fault handler finds the PTE already allowing it and fixes the local TLB only:
//   write fault (stale read-only entry): one local INVLPG, always;
//   read fault (a cached miss, on a platform whose TLB caches invalid entries,
//     as this test's machine does): one local INVLPG;
//   a fresh demand-zero page: no flush when it is mapped; the cached miss faults
//     once more and is fixed the same way.
// Every counter is exact, and no step sends a remote flush.
#include "guest_test_util.h"

using namespace pvmmu::guest;
using namespace pvmmu::guest::testing;

const char test_title[] = "stale TLB entries after a raise are fixed in the fault path, locally, counted";
const TestConfig test_config = {.cpus = 2, .needs = needs::kPvmmuOp, .tlb_caches_invalid = true};

namespace {

AddressSpace as;
Cpu* cpus[2];

Va pw() { return as.base() + 10 * level_span(Level::L2); }   // write case
Va pr() { return pw() + kPageSize; }                          // read case
Va pn() { return pw() + 2 * kPageSize; }                      // demand zero on vCPU 1

Snap delta(const Snap& a, const Snap& b)
{
    return Snap{b.faults - a.faults,         b.spurious - a.spurious,
                b.spurious_write - a.spurious_write, b.spurious_read - a.spurious_read,
                b.demand_zero - a.demand_zero, b.denied - a.denied,
                b.flush_local - a.flush_local, b.flush_remote - a.flush_remote,
                b.invlpg_pages - a.invlpg_pages, b.cleans - a.cleans,
                b.hypercalls - a.hypercalls, b.mmu_calls - a.mmu_calls,
                b.mmuext_calls - a.mmuext_calls, b.req0 - a.req0,
                b.req2 - a.req2, b.req4 - a.req4};
}

uint64_t shootdowns_sent()
{
    uint64_t n = 0;
    for (unsigned v = 0; v < 2; ++v) {
        rt::PlatformCounters pc;
        if (rt::platform_counters(v, pc)) n += pc.shootdowns_sent;
    }
    return n;
}

// Runs fn on vCPU 1 and waits for it.
template <class F>
void on_vcpu1(F&& fn)
{
    rt::on_all([&](Cpu& v) {
        if (v.id == 1) fn(v);
    });
}

void write_case(Cpu& c)
{
    CHECK(c.mem.store(pw(), 1));
    CHECK_EQ(as.mprotect(c, pw(), kPageSize, kProtRead), 0);
    on_vcpu1([](Cpu& v) { CHECK_EQ(load_or(v, pw()), 1); });   // caches a read-only entry

    const Snap a0 = snap(c), b0 = snap(*cpus[1]);
    const uint64_t sent0 = shootdowns_sent();
    CHECK_EQ(as.mprotect(c, pw(), kPageSize, kProtRead | kProtWrite), 0);
    const Snap a1 = delta(a0, snap(c));
    CHECK_EQ(a1.hypercalls, 1);   // the raise is one mmu_update, no flush
    CHECK_EQ(a1.flush_local + a1.flush_remote, 0);

    on_vcpu1([](Cpu& v) {
        CHECK(v.mem.store(pw(), 2));   // faults once on the stale entry
        CHECK(v.mem.store(pw(), 3));   // fixed: no more faults
    });
    const Snap b1 = delta(b0, snap(*cpus[1]));
    CHECK_EQ(b1.faults, 1);
    CHECK_EQ(b1.spurious, 1);
    CHECK_EQ(b1.spurious_write, 1);
    CHECK_EQ(b1.flush_local, 1);
    CHECK_EQ(b1.invlpg_pages, 1);
    CHECK_EQ(b1.flush_remote, 0);
    CHECK_EQ(b1.demand_zero, 0);
    CHECK_EQ(shootdowns_sent(), sent0);
    CHECK_EQ(load_or(c, pw()), 3);
}

void read_case(Cpu& c)
{
    CHECK(c.mem.store(pr(), 7));
    CHECK_EQ(as.mprotect(c, pr(), kPageSize, kProtNone), 0);
    const Snap b0 = snap(*cpus[1]);
    on_vcpu1([](Cpu& v) { CHECK(!can_read(v, pr())); });   // refused; the miss is cached
    Snap b1 = delta(b0, snap(*cpus[1]));
    CHECK_EQ(b1.faults, 1);
    CHECK_EQ(b1.denied, 1);

    const uint64_t sent0 = shootdowns_sent();
    const Snap a0 = snap(c);
    CHECK_EQ(as.mprotect(c, pr(), kPageSize, kProtRead), 0);
    CHECK_EQ(delta(a0, snap(c)).flush_remote + delta(a0, snap(c)).flush_local, 0);

    const Snap b2 = snap(*cpus[1]);
    on_vcpu1([](Cpu& v) {
        CHECK_EQ(load_or(v, pr()), 7);   // the cached miss faults once
        CHECK_EQ(load_or(v, pr()), 7);
    });
    b1 = delta(b2, snap(*cpus[1]));
    CHECK_EQ(b1.faults, 1);
    CHECK_EQ(b1.spurious, 1);
    CHECK_EQ(b1.spurious_read, 1);
    CHECK_EQ(b1.flush_local, 1);
    CHECK_EQ(b1.flush_remote, 0);
    CHECK_EQ(shootdowns_sent(), sent0);
}

void demand_zero_case()
{
    const Snap b0 = snap(*cpus[1]);
    const uint64_t sent0 = shootdowns_sent();
    on_vcpu1([](Cpu& v) {
        CHECK_EQ(load_or(v, pn()), 0);   // demand zero, then the cached miss once more
        CHECK_EQ(load_or(v, pn()), 0);
    });
    const Snap b1 = delta(b0, snap(*cpus[1]));
    CHECK_EQ(b1.faults, 2);
    CHECK_EQ(b1.demand_zero, 1);
    CHECK_EQ(b1.spurious, 1);
    CHECK_EQ(b1.spurious_read, 1);
    CHECK_EQ(b1.flush_local, 1);
    CHECK_EQ(b1.flush_remote, 0);
    CHECK_EQ(shootdowns_sent(), sent0);
}

} // namespace

void test_main()
{
    Cpu& c = rt::this_cpu();
    if (rt::nr_vcpus() < 2) return rt::skip("needs 2 vCPUs");
    if (!setup_space(as)) return;
    rt::on_all([](Cpu& v) {
        if (v.id < 2) cpus[v.id] = &v;
    });
    CHECK_EQ(as.map_anon(c, pw(), 3 * kPageSize, kProtRead | kProtWrite), 0);
    write_case(c);
    read_case(c);
    demand_zero_case();
}
