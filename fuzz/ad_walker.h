// Concurrent "hardware" for the fuzzer: a thread that keeps setting Accessed and
// Dirty bits in the live page tables while the hypercalls run, as the x86 walker
// does — a locked compare-exchange on a present entry, A on every level, D on
// writable L1 entries (docs/design.md §4: hardware may set A/D at any time; the core must
// tolerate exactly that). It walks one random path per step from the roots the
// harness publishes after each hypercall round, so a stale root makes it walk
// tables the core is tearing down: a harsher adversary than a CPU whose TLB was
// flushed, and still one that changes nothing but A/D bits of present words.
#pragma once

#include <atomic>
#include <thread>

#include "core/frame.h"

namespace pvmmu::fuzz {

class AdWalker {
public:
    static constexpr unsigned kRoots = 8;
    static constexpr uint64_t kMinSteps = 16;

    explicit AdWalker(MachineMemory mem) : mem_(mem) {}
    AdWalker(const AdWalker&) = delete;
    AdWalker& operator=(const AdWalker&) = delete;
    ~AdWalker() { stop(); }

    void start()
    {
        stop_.store(false);
        thread_ = std::thread([this] { run(); });
    }
    // Lets the walker take at least kMinSteps steps first, so every run really
    // had hardware racing it however the host schedules the thread.
    void stop()
    {
        while (thread_.joinable() && steps_.load(std::memory_order_relaxed) < kMinSteps)
            std::this_thread::yield();
        stop_.store(true);
        if (thread_.joinable()) thread_.join();
    }
    // Root `i` (an L4's frame number), or ~0 for none.
    void publish(unsigned i, uint64_t mfn) { roots_[i].store(mfn, std::memory_order_release); }
    uint64_t bits_set() const { return bits_set_.load(); }

private:
    // Sets `bits` in the entry if it is present; false if it is not.
    bool touch(uint64_t* slot, uint64_t bits)
    {
        std::atomic_ref<uint64_t> e(*slot);
        uint64_t cur = e.load(std::memory_order_relaxed);
        do {
            if (!(cur & pte_bit::P)) return false;
            if ((cur & bits) == bits) return true;
        } while (!e.compare_exchange_weak(cur, cur | bits, std::memory_order_acq_rel));
        bits_set_.fetch_add(1, std::memory_order_relaxed);
        return true;
    }

    void run()
    {
        uint64_t rng = 0x9e3779b97f4a7c15ull;
        auto next = [&rng] {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            return rng;
        };
        while (!stop_.load(std::memory_order_relaxed)) {
            steps_.fetch_add(1, std::memory_order_relaxed);
            const uint64_t root = roots_[next() % kRoots].load(std::memory_order_acquire);
            if (root >= mem_.nr_frames) continue;
            uint64_t m = root;
            // L4 -> L3 -> L2: the first present entry from a random index.
            for (int level = 4; level > 1 && m < mem_.nr_frames; --level) {
                uint64_t* t = mem_.table(Mfn{m});
                const unsigned start = unsigned(next() % kEntriesPerTable);
                uint64_t found = ~0ull;
                for (unsigned k = 0; k < kEntriesPerTable && found == ~0ull; ++k) {
                    uint64_t* slot = t + (start + k) % kEntriesPerTable;
                    if (touch(slot, pte_bit::A)) found = Pte{std::atomic_ref<uint64_t>(*slot).load()}.mfn().v;
                }
                m = found;
            }
            if (m >= mem_.nr_frames) continue;
            // A run of L1 entries: A on each, D on the writable ones.
            uint64_t* t = mem_.table(Mfn{m});
            const unsigned start = unsigned(next() % kEntriesPerTable);
            for (unsigned k = 0; k < 32; ++k) {
                uint64_t* slot = t + (start + k) % kEntriesPerTable;
                const uint64_t cur = std::atomic_ref<uint64_t>(*slot).load(std::memory_order_relaxed);
                touch(slot, cur & pte_bit::RW ? pte_bit::AD : pte_bit::A);
            }
        }
    }

    MachineMemory mem_;
    std::atomic<uint64_t> roots_[kRoots] = {};
    std::atomic<bool> stop_{false};
    std::atomic<uint64_t> bits_set_{0};
    std::atomic<uint64_t> steps_{0};
    std::thread thread_;
};

} // namespace pvmmu::fuzz
