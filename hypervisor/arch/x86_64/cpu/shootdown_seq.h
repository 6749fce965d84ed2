// The sequence numbers of one TLB-shootdown mailbox (cpu/shootdown.h), apart
// from what is flushed, so that hosted tests run this very code
// (tests/concurrency/shootdown_seq_test.cc). One sender at a time owns the
// mailbox: it writes its request, posts it (`requested` + 1, release) and
// waits for the target to acknowledge it. The target serves: it reads
// `requested`, copies the request, flushes and acknowledges what it read in
// `done`.
//
// A target serves with interrupts enabled (relax(), a flush wait inside a
// hypercall), so a shootdown IPI can run a nested serve between an outer
// serve's read of `requested` and its acknowledgement; the nested one may
// acknowledge a newer request (its sender has moved on and the next one has
// posted). So `done` only moves forward (a compare-exchange maximum), and a
// sender waits for `done >= seq`, never for equality; and the outer serve's
// copy of the request may mix the old request with the next one, so it is
// used only if its request was still unacknowledged once the copy was made
// (docs/security.md §7.2).
#pragma once

#include <atomic>
#include <stdint.h>

namespace pvmmu::x86 {

class ShootdownSeq {
public:
    // Sender, owning the mailbox: write() stores the request, then it is
    // published; returns its number. A serve that was interrupted may still
    // be copying the previous request meanwhile (serve()), so write() stores
    // with release atomics: a copy that sees one of them also sees the
    // acknowledgement that let this sender take the mailbox, and is dropped.
    template <class Write> uint64_t post(Write&& write)
    {
        write();
        const uint64_t seq = requested_.load(std::memory_order_relaxed) + 1;
        requested_.store(seq, std::memory_order_release);
        return seq;
    }

    // Target: when a request is newer than the last acknowledged one, copies
    // it with read() (acquire atomics), runs flush(copy) and acknowledges
    // it. Returns true when this serve is the one that acknowledged the
    // request: exactly one serve does, so what is counted on true is counted
    // once per request, however serves nest.
    template <class Read, class Flush> bool serve(Read&& read, Flush&& flush)
    {
        const uint64_t want = requested_.load(std::memory_order_acquire);
        if (done_.load(std::memory_order_relaxed) >= want) return false;
        const auto copy = read();
        // A nested serve may have acknowledged `want` while read() ran, and
        // the next sender written its request over it: then the copy may be
        // torn, and the request was flushed anyway. If read() saw a store of
        // the next sender, that store (release, read by acquire) carries the
        // acknowledgement before it to the load below. So a copy made while
        // `done` stayed below `want` is `want`'s, whole.
        if (done_.load(std::memory_order_relaxed) >= want) return false;
        flush(copy);
        uint64_t d = done_.load(std::memory_order_relaxed);
        while (d < want) {
            if (done_.compare_exchange_weak(d, want, std::memory_order_release, std::memory_order_relaxed))
                return true;
        }
        return false;   // a nested serve acknowledged it while this one flushed
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
