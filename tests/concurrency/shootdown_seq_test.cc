// The bare-metal shootdown mailbox's sequence numbers (cpu/shootdown_seq.h;
// docs/security.md §7.2). A target serves with interrupts enabled (from
// relax() or a flush wait inside a hypercall), so a shootdown IPI can run a
// nested serve between an outer serve's read of the request and its
// acknowledgement. The acknowledgement must never move backwards, a sender
// must see its request acknowledged without the target serving again, a
// serve must not flush a request it copied while the next sender rewrote it,
// and each request is acknowledged by exactly one serve.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cpu/shootdown_seq.h"

namespace pvmmu::test {
namespace {

using x86::ShootdownSeq;

// A mailbox whose request is two words that every sender sets to one value:
// a copy whose words differ is torn.
struct Box {
    ShootdownSeq seq;
    std::atomic<uint64_t> lo{0}, hi{0};

    using Request = std::pair<uint64_t, uint64_t>;

    uint64_t send(uint64_t v)
    {
        return seq.post([&] {
            lo.store(v, std::memory_order_release);
            hi.store(v, std::memory_order_release);
        });
    }
    // A serve whose flush records what it was given.
    bool serve(std::vector<Request>& flushed)
    {
        return seq.serve([this] { return copy(); }, [&](const Request& r) { flushed.push_back(r); });
    }
    Request copy() const { return {lo.load(std::memory_order_acquire), hi.load(std::memory_order_acquire)}; }
};

TEST(ShootdownSeq, EachRequestIsFlushedOnceAndAcknowledged)
{
    Box box;
    std::vector<Box::Request> flushed;
    EXPECT_FALSE(box.serve(flushed));
    EXPECT_TRUE(flushed.empty()) << "nothing posted";
    const uint64_t seq = box.send(7);
    EXPECT_TRUE(box.serve(flushed));
    EXPECT_FALSE(box.serve(flushed));
    ASSERT_EQ(flushed.size(), 1u);
    EXPECT_EQ(flushed[0], Box::Request(7, 7));
    EXPECT_EQ(box.seq.done(), seq);
    unsigned spins = 0;
    box.seq.wait(seq, [&] { ++spins; });
    EXPECT_EQ(spins, 0u);
}

// The outer serve reads request 1 and flushes. An IPI arrives meanwhile: a
// nested serve acknowledges 1, its sender moves on, the next sender posts 2,
// whose IPI is served nested too. The outer serve then acknowledges what it
// read, 1: that must not take back the acknowledgement of 2. Request 1 was
// flushed twice but acknowledged, and so counted, once.
TEST(ShootdownSeq, AServeInterruptedByANestedServeOfANewerRequestLeavesTheNewerAcknowledged)
{
    Box box;
    const uint64_t first = box.send(1);
    uint64_t second = 0;
    std::vector<Box::Request> flushed;
    unsigned acks = 0;
    const bool outer = box.seq.serve([&] { return box.copy(); }, [&](const Box::Request& r) {
        flushed.push_back(r);
        acks += box.serve(flushed);
        EXPECT_EQ(box.seq.done(), first);
        second = box.send(2);
        acks += box.serve(flushed);
        EXPECT_EQ(box.seq.done(), second);
    });
    EXPECT_FALSE(outer) << "request 1 acknowledged twice";
    EXPECT_EQ(acks, 2u);
    EXPECT_EQ(flushed.size(), 3u);
    EXPECT_EQ(box.seq.done(), second) << "the outer serve took the acknowledgement back";

    // The second sender waits. Had the acknowledgement gone back, only the
    // target serving again would free it (here after 1000 spins, so that the
    // test ends; on a CPU perhaps never, with the sender holding a page lock).
    unsigned spins = 0;
    box.seq.wait(second, [&] {
        if (++spins == 1000) box.serve(flushed);
    });
    EXPECT_EQ(spins, 0u) << "the sender waited for the target to serve again";
}

// The IPI comes while the outer serve copies request 1: the nested serve
// acknowledges 1, the next sender writes 2 over it and posts, and the outer
// serve reads the rest of the mailbox: its copy is half 1, half 2. It must
// flush nothing (request 1 is flushed already, 2 is not its own to
// acknowledge) and leave 2 to the next serve.
TEST(ShootdownSeq, AServeWhoseRequestIsRewrittenWhileItCopiesItDoesNotUseTheCopy)
{
    Box box;
    const uint64_t first = box.send(1);
    uint64_t second = 0;
    std::vector<Box::Request> flushed;
    Box::Request torn{};
    const bool outer = box.seq.serve(
        [&] {
            const uint64_t lo = box.lo.load(std::memory_order_acquire);
            EXPECT_TRUE(box.serve(flushed));
            EXPECT_EQ(box.seq.done(), first);
            second = box.send(2);
            torn = {lo, box.hi.load(std::memory_order_acquire)};
            return torn;
        },
        [&](const Box::Request& r) { flushed.push_back(r); });
    EXPECT_EQ(torn, Box::Request(1, 2)) << "the interleaving did not happen";
    EXPECT_FALSE(outer);
    ASSERT_EQ(flushed.size(), 1u) << "the outer serve flushed its torn copy";
    EXPECT_EQ(flushed[0], Box::Request(1, 1));
    EXPECT_EQ(box.seq.done(), first);

    EXPECT_TRUE(box.serve(flushed));
    ASSERT_EQ(flushed.size(), 2u);
    EXPECT_EQ(flushed[1], Box::Request(2, 2));
    EXPECT_EQ(box.seq.done(), second);
}

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kRequests = 2000;
#else
constexpr uint64_t kRequests = 20000;
#endif
// Past kRequests the senders go on until both nested interleavings were seen,
// up to this long; a host that never shows one fails the test.
constexpr auto kMaxTime = std::chrono::seconds(20);

// Real threads: two senders share the mailbox (one at a time, as its lock
// makes them), the target serves in a loop and, inside every other copy and
// every other flush, serves again a few times as nested IPIs would, yielding
// in between so that a sender can take the mailbox and post a newer request
// meanwhile. (A nested serve in the copy acknowledges the request, so the
// outer serve then never flushes: the two alternate.)
// Both interleavings of the deterministic tests above must happen at least
// once: a nested serve acknowledging a newer request during an outer copy
// (the mailbox rewritten under it) and during an outer flush.
TEST(ShootdownSeq, NestedServesNeverMoveTheAcknowledgementBackWithRealThreads)
{
    Box box;
    std::mutex owner;   // the mailbox's sender lock
    std::atomic<bool> stop_target{false}, stop_senders{false};
    std::atomic<uint64_t> posted{0}, rewritten_in_copy{0}, newer_in_flush{0};
    uint64_t backwards = 0, torn = 0, acks = 0;

    // Serves nested in an outer serve's copy or flush; true when one of them
    // acknowledged a request newer than the one pending when the outer read it.
    const auto nested = [&] {
        const uint64_t before = box.seq.done();
        for (int i = 0; i < 4; ++i) {
            acks += box.seq.serve([&] { return box.copy(); },
                                  [&](const Box::Request& r) { torn += r.first != r.second; });
            std::this_thread::yield();
        }
        return box.seq.done() > before + 1;
    };
    std::thread target([&] {
        for (uint64_t round = 0; !stop_target.load(std::memory_order_acquire); ++round) {
            const bool in_copy = round % 2;
            uint64_t inner = 0;
            acks += box.seq.serve(
                [&] {
                    const uint64_t lo = box.lo.load(std::memory_order_acquire);
                    if (in_copy && nested()) rewritten_in_copy.fetch_add(1, std::memory_order_relaxed);
                    return Box::Request(lo, box.hi.load(std::memory_order_acquire));
                },
                [&](const Box::Request& r) {
                    torn += r.first != r.second;
                    if (!in_copy && nested()) newer_in_flush.fetch_add(1, std::memory_order_relaxed);
                    inner = box.seq.done();
                });
            if (box.seq.done() < inner) ++backwards;
            std::this_thread::yield();
        }
    });
    auto sender = [&](uint64_t id) {
        for (uint64_t i = 1; !stop_senders.load(std::memory_order_acquire); ++i) {
            std::lock_guard<std::mutex> hold(owner);
            const uint64_t seq = box.send(i << 1 | id);
            box.seq.wait(seq, [] { std::this_thread::yield(); });
            EXPECT_GE(box.seq.done(), seq);
            posted.fetch_add(1, std::memory_order_relaxed);
        }
    };
    std::thread s1(sender, 0), s2(sender, 1);
    const auto start = std::chrono::steady_clock::now();
    while (!(posted.load(std::memory_order_relaxed) >= kRequests &&
             rewritten_in_copy.load(std::memory_order_relaxed) > 0 &&
             newer_in_flush.load(std::memory_order_relaxed) > 0) &&
           std::chrono::steady_clock::now() - start < kMaxTime)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stop_senders.store(true, std::memory_order_release);
    s1.join();
    s2.join();
    stop_target.store(true, std::memory_order_release);
    target.join();

    EXPECT_EQ(backwards, 0u) << "outer serves that moved the acknowledgement back";
    EXPECT_EQ(torn, 0u) << "flushes of a torn copy";
    EXPECT_EQ(box.seq.done(), posted.load());
    EXPECT_EQ(acks, posted.load()) << "requests acknowledged by no serve or by two";
    EXPECT_GT(rewritten_in_copy.load(), 0u) << "no nested serve acknowledged a newer request during a copy";
    EXPECT_GT(newer_in_flush.load(), 0u) << "no nested serve acknowledged a newer request during a flush";
    ::testing::Test::RecordProperty("posted", std::to_string(posted.load()));
    ::testing::Test::RecordProperty("rewritten_in_copy", std::to_string(rewritten_in_copy.load()));
    ::testing::Test::RecordProperty("newer_in_flush", std::to_string(newer_in_flush.load()));
}

} // namespace
} // namespace pvmmu::test
