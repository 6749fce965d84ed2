// The bare-metal shootdown mailbox's sequence numbers (arch/shootdown_seq.h;
// docs/security.md §7.2). A target serves with interrupts enabled (from
// relax() or a flush wait inside a hypercall), so a shootdown IPI can run a
// nested serve between an outer serve's read of the request and its
// acknowledgement. The acknowledgement must never move backwards, and a
// sender must see its request acknowledged without the target serving again.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "arch/shootdown_seq.h"

namespace pvmmu::test {
namespace {

using x86::ShootdownSeq;

TEST(ShootdownSeq, EachRequestIsFlushedOnceAndAcknowledged)
{
    ShootdownSeq box;
    unsigned flushes = 0;
    box.serve([&] { ++flushes; });
    EXPECT_EQ(flushes, 0u) << "nothing posted";
    const uint64_t seq = box.post();
    box.serve([&] { ++flushes; });
    box.serve([&] { ++flushes; });
    EXPECT_EQ(flushes, 1u);
    EXPECT_EQ(box.done(), seq);
    unsigned spins = 0;
    box.wait(seq, [&] { ++spins; });
    EXPECT_EQ(spins, 0u);
}

// The outer serve reads request 1 and flushes. An IPI arrives meanwhile: a
// nested serve acknowledges 1, its sender moves on, the next sender posts 2,
// whose IPI is served nested too. The outer serve then acknowledges what it
// read, 1: that must not take back the acknowledgement of 2.
TEST(ShootdownSeq, AServeInterruptedByANestedServeOfANewerRequestLeavesTheNewerAcknowledged)
{
    ShootdownSeq box;
    const uint64_t first = box.post();
    uint64_t second = 0;
    unsigned flushes = 0;
    box.serve([&] {
        ++flushes;
        box.serve([&] { ++flushes; });
        EXPECT_EQ(box.done(), first);
        second = box.post();
        box.serve([&] { ++flushes; });
        EXPECT_EQ(box.done(), second);
    });
    EXPECT_EQ(flushes, 3u);
    EXPECT_EQ(box.done(), second) << "the outer serve took the acknowledgement back";

    // The second sender waits. Had the acknowledgement gone back, only the
    // target serving again would free it (here after 1000 spins, so that the
    // test ends; on a CPU perhaps never, with the sender holding a page lock).
    unsigned spins = 0;
    box.wait(second, [&] {
        if (++spins == 1000) box.serve([&] { ++flushes; });
    });
    EXPECT_EQ(spins, 0u) << "the sender waited for the target to serve again";
}

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kRequests = 2000;
#else
constexpr uint64_t kRequests = 20000;
#endif

// Real threads: two senders share the mailbox (one at a time, as its lock
// makes them), the target serves in a loop and, inside each flush, serves
// again a few times as nested IPIs would, yielding in between so that a
// sender can post a newer request meanwhile.
TEST(ShootdownSeq, NestedServesNeverMoveTheAcknowledgementBackWithRealThreads)
{
    ShootdownSeq box;
    std::mutex owner;   // the mailbox's sender lock
    std::atomic<bool> stop{false};
    uint64_t backwards = 0, nested_newer = 0;

    std::thread target([&] {
        while (!stop.load(std::memory_order_acquire)) {
            uint64_t inner = 0;
            box.serve([&] {
                const uint64_t outer = box.done();
                for (int i = 0; i < 4; ++i) {
                    box.serve([] {});
                    std::this_thread::yield();
                }
                inner = box.done();
                if (inner > outer + 1) ++nested_newer;
            });
            if (box.done() < inner) ++backwards;
            std::this_thread::yield();
        }
    });
    auto sender = [&] {
        for (uint64_t i = 0; i < kRequests; ++i) {
            std::lock_guard<std::mutex> hold(owner);
            const uint64_t seq = box.post();
            box.wait(seq, [] { std::this_thread::yield(); });
            EXPECT_GE(box.done(), seq);
        }
    };
    std::thread s1(sender), s2(sender);
    s1.join();
    s2.join();
    stop.store(true, std::memory_order_release);
    target.join();

    EXPECT_EQ(backwards, 0u) << "outer serves that moved the acknowledgement back";
    EXPECT_EQ(box.done(), 2 * kRequests);
    ::testing::Test::RecordProperty("nested_newer", std::to_string(nested_newer));
}

} // namespace
} // namespace pvmmu::test
