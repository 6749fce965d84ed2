// The sequence numbers of one TLB-shootdown mailbox (arch/shootdown.h), apart
// from what is flushed, so that hosted tests run this very code
// (tests/concurrency/shootdown_seq_test.cc). One sender at a time owns the
// mailbox: it writes its request, posts it (`requested` + 1, release) and
// waits for the target to acknowledge it. The target serves: it reads
// `requested`, flushes and acknowledges what it read in `done`.
//
// A target serves with interrupts enabled (relax(), a flush wait inside a
// hypercall), so a shootdown IPI can run a nested serve between an outer
// serve's read of `requested` and its acknowledgement; the nested one may
// acknowledge a newer request (its sender has moved on and the next one has
// posted). So `done` only moves forward (a compare-exchange maximum), and a
// sender waits for `done >= seq`, never for equality (docs/security.md §7.2).
#pragma once

#include <atomic>
#include <stdint.h>

namespace pvmmu::x86 {

class ShootdownSeq {
public:
    // Sender, owning the mailbox, its request written: publishes the request
    // and returns its number.
    uint64_t post()
    {
        const uint64_t seq = requested_.load(std::memory_order_relaxed) + 1;
        requested_.store(seq, std::memory_order_release);
        return seq;
    }

    // Target: when a request is newer than the last acknowledged one, runs
    // flush() for it and acknowledges it.
    template <class Flush> void serve(Flush&& flush)
    {
        const uint64_t want = requested_.load(std::memory_order_acquire);
        if (done_.load(std::memory_order_relaxed) >= want) return;
        flush();
        uint64_t d = done_.load(std::memory_order_relaxed);
        while (d < want && !done_.compare_exchange_weak(d, want, std::memory_order_release,
                                                        std::memory_order_relaxed)) {
        }
    }

    // Sender: calls spin() until request `seq` (or a later one) is acknowledged.
    template <class Spin> void wait(uint64_t seq, Spin&& spin) const
    {
        while (done_.load(std::memory_order_acquire) < seq) spin();
    }

    uint64_t done() const { return done_.load(std::memory_order_acquire); }

private:
    std::atomic<uint64_t> requested_{0};
    std::atomic<uint64_t> done_{0};
};

} // namespace pvmmu::x86
