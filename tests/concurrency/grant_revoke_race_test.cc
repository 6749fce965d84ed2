// A mapper maps and unmaps a grant while the granter revokes and offers it
// again, as Linux does (a compare-exchange of the entry's flags that fails
// while GTF_reading or GTF_writing is set; core/grant_table.h). Whenever a
// revocation succeeds, no mapping of the frame may exist: the frame's general
// count is back at what the granter's own mapping holds. The pin sets
// GTF_reading before the mapping takes its reference, and the unmap drops the
// reference (after the flush) before the pin clears the flags, so the count
// can never be seen raised by a revoker that won.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "support/grant_fixture.h"

namespace pvmmu::test {
namespace {

class GrantRevokeRace : public GrantTest {};

TEST_F(GrantRevokeRace, ARevocationThatSucceedsNeverLeavesAMappingBehind)
{
    setup();
    constexpr uint64_t kGranted = 500;
    constexpr grant_ref_t kRef = 5;
    grant(kRef, kGranted);
    const Mfn f = lay.mfn(kGranted);
    const uint32_t baseline = frame(f).count;
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(&entry(kRef)));
    const uint32_t offered = uint32_t(GTF_permit_access) | (uint32_t(kPeer) << 16);

    // At least kRounds rounds, and more (up to kMaxRounds) until the granter
    // has won once: on a loaded machine its thread may start late.
    constexpr unsigned kRounds = 20'000, kMaxRounds = 2'000'000;
    std::atomic<bool> stop{false};
    std::atomic<unsigned> revoked{0}, mapped{0}, breaches{0};
    std::atomic<int> last_status{0};

    std::thread granter([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            uint32_t expect = offered;
            if (word.compare_exchange_strong(expect, 0)) {
                // Revoked: nothing may map the frame now.
                if (frame(f).count.load() != baseline) breaches.fetch_add(1);
                revoked.fetch_add(1, std::memory_order_relaxed);
                word.store(offered);   // offered again
            }
            // A guest revokes now and then, not in a tight loop: leave
            // the mapper room to pin between attempts.
            std::this_thread::yield();
        }
    });
    std::thread mapper([&] {
        for (unsigned i = 0; i < kRounds || (revoked.load() == 0 && i < kMaxRounds); ++i) {
            gnttab_map_grant_ref_t op{};
            op.host_addr = peer_va(40);
            op.flags = GNTMAP_host_map;
            op.ref = kRef;
            op.dom = kDom;
            grant_map_one(hv(), p0(), op);
            if (op.status != GNTST_okay) {   // revoked at that instant
                last_status.store(op.status, std::memory_order_relaxed);
                continue;
            }
            mapped.fetch_add(1, std::memory_order_relaxed);
            int16_t st = 99;
            grant_unmap_one(hv(), p0(), peer_va(40), 0, op.handle, st, false);
            if (st != GNTST_okay) breaches.fetch_add(1);
        }
        stop.store(true);
    });
    mapper.join();
    granter.join();
    EXPECT_EQ(breaches.load(), 0u);
    EXPECT_GT(mapped.load(), 0u) << "last refusal " << last_status.load();
    EXPECT_GT(revoked.load(), 0u);
    EXPECT_EQ(frame(f).count, baseline);
    EXPECT_TRUE(invariants_hold(m));
}

} // namespace
} // namespace pvmmu::test
