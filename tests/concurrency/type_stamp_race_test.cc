// A frame's TLB-flush stamp against real threads (docs/security.md §7.5): CPUs
// 1 and 2 take and drop writable type references to one frame while CPU 0
// keeps making it an L1. CPU 1, each time it holds a reference, flushes its
// whole TLB and then caches the writable translation; only a flush empties it.
// A yield at the race point before the last drop widens the window.
// Whenever CPU 0 holds the frame as an L1, CPU 1's TLB must not hold it
// writable: the type change flushed every CPU that might. The exact
// interleaving is RefsTest.TypeChangeFlushesACpuThatCachedAWritableMappingMadeDuringTheLastDrop.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include <pvmmu/abi.h>

#include "core/refs.h"
#include "sim/arena.h"

namespace pvmmu::test {
namespace {

#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kChanges = 2000;
#else
constexpr uint64_t kChanges = 20000;
#endif
constexpr uint64_t kMinEach = 200;   // references taken by each of CPUs 1 and 2
// A loaded host can starve one thread for a while: past this, what was done is enough.
constexpr auto kMaxTime = std::chrono::seconds(20);

// Each CPU's TLB as far as this frame goes: does it hold it writable?
class TlbModel final : public Platform {
public:
    void attach(Hypervisor& hv) { hv_ = &hv; }
    void flush_tlbs(CpuMask cpus, FlushRequest req) override
    {
        for (CpuId c = 0; c < kMaxCpus; ++c) {
            if (!cpus.has(c)) continue;
            if (req.kind == FlushKind::All) flush(c);
            else writable[c].store(false, std::memory_order_release);
        }
    }
    void flush(CpuId c)
    {
        const uint64_t t = hv_->clock().begin_flush();
        writable[c].store(false, std::memory_order_release);
        hv_->clock().record_flush(c, t);
    }
    void relax() override { std::this_thread::yield(); }
    int copy_from_guest(Vcpu&, void*, Vaddr, size_t) override { return -XEN_EFAULT; }
    int copy_to_guest(Vcpu&, Vaddr, const void*, size_t) override { return -XEN_EFAULT; }
    void load_base(Vcpu&) override {}

    std::atomic<bool> writable[kMaxCpus] = {};

private:
    Hypervisor* hv_ = nullptr;
};

TEST(TypeStampRace, NoCpuKeepsAWritableTranslationOfAFrameThatBecameAPageTable)
{
    sim::Arena arena(64);
    TlbModel tlb;
    Hypervisor hv(arena.mem(), arena.frames(), arena.m2p(), tlb);
    tlb.attach(hv);
    for (CpuId c = 0; c < 3; ++c) hv.cpu_online(c);
    // Widens the window between reading the last reference and dropping it.
    ASSERT_TRUE(race_points_compiled());
    hv.set_race_hook([](void*, RacePoint p, Mfn) {
        if (p == RacePoint::LastTypeDrop) std::this_thread::yield();
    }, nullptr);
    const Mfn f{40};   // a free, zeroed frame: it validates as an empty L1

    std::atomic<bool> stop{false};
    std::atomic<unsigned> started{0};
    std::atomic<uint64_t> cached{0}, dropped{0};
    std::thread cpu1([&] {
        started.fetch_add(1, std::memory_order_acq_rel);
        while (!stop.load(std::memory_order_acquire)) {
            if (get_writable_type(hv, f) != 0) {
                std::this_thread::yield();
                continue;
            }
            tlb.flush(1);
            tlb.writable[1].store(true, std::memory_order_release);   // a walk caches the mapping
            put_page_type(hv, f);                                     // the mapping goes, the TLB entry stays
            cached.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();   // and lets CPU 0 find the count at 0
        }
    });
    std::thread cpu2([&] {
        started.fetch_add(1, std::memory_order_acq_rel);
        while (!stop.load(std::memory_order_acquire)) {
            if (get_writable_type(hv, f) != 0) {
                std::this_thread::yield();
                continue;
            }
            put_page_type(hv, f);
            dropped.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();
        }
    });

    while (started.load(std::memory_order_acquire) < 2) std::this_thread::yield();
    uint64_t changes = 0, stale = 0;
    const auto enough = [&] {
        return changes >= kChanges && cached.load(std::memory_order_relaxed) >= kMinEach &&
               dropped.load(std::memory_order_relaxed) >= kMinEach;
    };
    const auto start = std::chrono::steady_clock::now();
    while (!enough() && std::chrono::steady_clock::now() - start < kMaxTime) {
        if (get_page_type(hv, f, PageType::L1) != 0) {
            std::this_thread::yield();
            continue;
        }
        ++changes;
        if (tlb.writable[1].load(std::memory_order_acquire)) ++stale;
        put_page_type(hv, f);
    }
    stop.store(true, std::memory_order_release);
    cpu1.join();
    cpu2.join();

    EXPECT_EQ(stale, 0u) << "times CPU 1 still held the frame writable while it was an L1";
    EXPECT_TRUE(changes > 0 && cached.load() > 0 && dropped.load() > 0)
        << changes << " changes, " << cached.load() << " and " << dropped.load() << " references";
    EXPECT_EQ(hv.frame(f).type_count(), 0u);
    ::testing::Test::RecordProperty("changes", std::to_string(changes));
    ::testing::Test::RecordProperty("cached", std::to_string(cached.load()));
    ::testing::Test::RecordProperty("dropped", std::to_string(dropped.load()));
}

} // namespace
} // namespace pvmmu::test
