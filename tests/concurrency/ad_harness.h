// The A/D accounting harness: writer vCPUs keep writing a set of
// pages while an updater vCPU rewrites the same PTEs with hypercalls, from values
// it read before the writers dirtied them. Work goes in rounds; at the start of a
// round every A and D bit is cleared and every TLB flushed, at the end the bits
// present are harvested. The walker counts every A and D bit it sets, so
//     bits set by walkers == bits harvested        exactly when none was lost.
// Its own detector is shown to work by the cmd-0 read-modify-write mode, which
// loses bits (Xen's MMU_NORMAL_PT_UPDATE overwrites A/D set meanwhile).
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "sim/guest_context.h"

namespace pvmmu::test {

enum class UpdateMode { Atomic, FlagRange, Mixed, NormalRmw };

struct AdResult {
    uint64_t rounds = 0, pte_updates = 0, hypercalls = 0;
    uint64_t a_set = 0, d_set = 0;           // by the writers' walkers
    uint64_t a_harvested = 0, d_harvested = 0;
    uint64_t lost() const { return (a_set - a_harvested) + (d_set - d_harvested); }
};

struct AdConfig {
    UpdateMode mode = UpdateMode::Mixed;
    unsigned writers = 2;
    unsigned pages = 64;                 // all in one L1
    uint64_t min_pte_updates = 1000000;  // stop after at least this many...
    uint64_t max_rounds = ~0ull;         // ...or this many rounds
    unsigned batches_per_round = 8;
    // Lockstep: instead of writing freely, a writer dirties entry i exactly
    // between the updater's read of it and its install: the race of the seeds,
    // every time, so losses (or their absence) are exact, not likely.
    bool lockstep = false;
};

// A barrier whose waiters keep serving shootdowns (a vCPU that only spun here
// would never acknowledge the updater's flush).
class PollingBarrier {
public:
    explicit PollingBarrier(unsigned n) : n_(n) {}
    void wait(sim::GuestContext& g)
    {
        const unsigned gen = gen_.load(std::memory_order_acquire);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
            arrived_.store(0, std::memory_order_relaxed);
            gen_.fetch_add(1, std::memory_order_acq_rel);
            return;
        }
        while (gen_.load(std::memory_order_acquire) == gen) {
            g.poll();
            std::this_thread::yield();
        }
    }

private:
    const unsigned n_;
    std::atomic<unsigned> arrived_{0};
    std::atomic<unsigned> gen_{0};
};

inline AdResult run_ad_harness(const AdConfig& cfg)
{
    const unsigned vcpus = cfg.writers + 1;
    sim::Machine m(sim::MachineConfig{.cpus = vcpus, .frames = 4096});
    DomainLayout lay;
    Domain* d = m.create_domain(1, 2048, vcpus, lay);
    if (!d) return {};
    const uint64_t first = 1024;        // data pages gpfn 1024.., one L1 (1024/512 = 2)
    const uint64_t reqbuf = 1536;       // request arrays: gpfns 1536..1539
    const uint64_t mask_page = 1540;    // the vCPU bitmap for flushes

    PollingBarrier barrier(vcpus);
    std::atomic<bool> round_over{false}, finished{false};
    AdResult r;
    std::vector<uint64_t> a_before(vcpus), d_before(vcpus);
    std::atomic<uint64_t> a_set{0}, d_set{0};

    const uint64_t nx_toggle = pte_bit::NX | (1ull << 9) | (1ull << 52);   // flags only, never RW/P

    // Lockstep hand-over: the updater posts a page, its writer stores to it.
    std::atomic<uint64_t> posted{0}, acked{0}, posted_page{0};

    m.run(*d, [&](sim::GuestContext& g) {
        const bool updater = g.vcpu().id == 0;
        auto pte_va = [&](uint64_t i) {   // the guest reads its (read-only) L1 at its physmap address
            return Vaddr{lay.va(lay.l1_gpfn(first + i)).v + ((first + i) % kEntriesPerTable) * 8};
        };
        auto flush_all = [&] {
            mmuext_op_t op{};
            op.cmd = MMUEXT_TLB_FLUSH_ALL;
            EXPECT_TRUE(g.write_bytes(lay.va(mask_page), &op, sizeof(op)));
            EXPECT_EQ(g.hypercall(__HYPERVISOR_mmuext_op, lay.va(mask_page).v, 1, 0, DOMID_SELF), 0);
        };
        auto submit = [&](const std::vector<mmu_update_t>& reqs) {
            EXPECT_TRUE(g.write_bytes(lay.va(reqbuf), reqs.data(), reqs.size() * sizeof(mmu_update_t)));
            EXPECT_EQ(g.hypercall(__HYPERVISOR_mmu_update, lay.va(reqbuf).v, reqs.size(), 0, DOMID_SELF), 0);
            ++r.hypercalls;
        };
        for (;;) {
            // Round start: the updater clears A and D everywhere and flushes.
            if (updater) {
                const bool done = r.pte_updates >= cfg.min_pte_updates || r.rounds >= cfg.max_rounds;
                finished.store(done);
                if (!done) {
                    submit({{lay.pte_maddr(first).v | MMU_FLAG_RANGE_UPDATE,
                             abi::encode_flag_range(pte_bit::AD, 0, cfg.pages)}});
                    flush_all();
                }
                round_over.store(false);
            }
            barrier.wait(g);
            if (finished.load()) return;
            const unsigned me = g.vcpu().id;
            a_before[me] = g.counters().a_set;
            d_before[me] = g.counters().d_set;
            barrier.wait(g);

            auto dirty_now = [&](uint64_t i) {   // updater side of the lockstep
                if (!cfg.lockstep) return;
                posted_page.store(i);
                const uint64_t ticket = posted.fetch_add(1) + 1;
                while (acked.load() != ticket) {
                    g.poll();
                    std::this_thread::yield();
                }
            };
            if (!updater && cfg.lockstep) {
                while (!round_over.load()) {
                    const uint64_t t = posted.load();
                    const uint64_t i = posted_page.load();
                    if (t != acked.load() && 1 + i % cfg.writers == me) {
                        EXPECT_TRUE(g.store(lay.va(first + i), t));
                        acked.store(t);
                    } else {
                        g.poll();
                        std::this_thread::yield();
                    }
                }
            } else if (!updater) {
                for (uint64_t k = 0; !round_over.load(std::memory_order_relaxed); ++k) {
                    const uint64_t i = (k + me * 7) % cfg.pages;
                    EXPECT_TRUE(g.store(lay.va(first + i), k));
                    // Host threads share few cores: give the CPU up now and then,
                    // as a preempted vCPU would, so shootdowns are answered soon.
                    if (k % 32 == 31) std::this_thread::yield();
                }
            } else {
                // Stale reads: the values before any writer dirtied the pages.
                std::vector<uint64_t> seen(cfg.pages);
                for (unsigned i = 0; i < cfg.pages; ++i) EXPECT_TRUE(g.load(pte_va(i), seen[i]));
                for (unsigned b = 0; b < cfg.batches_per_round; ++b) {
                    const bool use_range = cfg.mode == UpdateMode::FlagRange ||
                                           (cfg.mode == UpdateMode::Mixed && (b & 1));
                    if (cfg.mode == UpdateMode::NormalRmw) {
                        // Read-modify-write with cmd 0, one entry at a time.
                        for (unsigned i = 0; i < cfg.pages; ++i) {
                            uint64_t cur;
                            EXPECT_TRUE(g.load(pte_va(i), cur));
                            dirty_now(i);
                            submit({{lay.pte_maddr(first + i).v | MMU_NORMAL_PT_UPDATE, cur ^ nx_toggle}});
                        }
                    } else if (use_range) {
                        for (unsigned i = 0; i < cfg.pages; ++i) dirty_now(i);
                        const uint64_t bits = (b & 2) ? nx_toggle : 0;
                        submit({{lay.pte_maddr(first).v | MMU_FLAG_RANGE_UPDATE,
                                 abi::encode_flag_range(nx_toggle, bits, cfg.pages)}});
                    } else {
                        std::vector<mmu_update_t> reqs(cfg.pages);
                        for (unsigned i = 0; i < cfg.pages; ++i) {
                            seen[i] ^= nx_toggle;   // the stale value, without A/D set since
                            reqs[i] = {lay.pte_maddr(first + i).v | MMU_ATOMIC_PT_UPDATE, seen[i]};
                            dirty_now(i);
                        }
                        submit(reqs);
                    }
                    r.pte_updates += cfg.pages;
                    flush_all();   // writers walk again: a lost bit would be set twice
                }
                round_over.store(true);
            }
            barrier.wait(g);
            // The updater's own walks (its request pages, its reads of the L1)
            // touch no target page: only the writers' counts are compared.
            if (!updater) {
                a_set += g.counters().a_set - a_before[me];
                d_set += g.counters().d_set - d_before[me];
            }
            barrier.wait(g);
            if (updater) {
                // Harvest: read every entry (guest reads of the read-only L1).
                for (unsigned i = 0; i < cfg.pages; ++i) {
                    uint64_t e;
                    EXPECT_TRUE(g.load(pte_va(i), e));
                    r.a_harvested += (e & pte_bit::A) ? 1 : 0;
                    r.d_harvested += (e & pte_bit::D) ? 1 : 0;
                }
                ++r.rounds;
                r.a_set = a_set.load();
                r.d_set = d_set.load();
            }
        }
    });
    return r;
}

} // namespace pvmmu::test
