// Events raised on real threads while guests on other threads consume them
// (core/src/evtchn_2l.cc): producers send on IPI ports through
// EVTCHNOP_send, each consumer takes its vCPU's events as Linux's upcall
// does (flag, selector, then each unmasked pending port) and, for a quarter
// of the ports, masks the port while it handles it and unmasks it through
// EVTCHNOP_unmask. A port is sent again only once its previous event was
// taken, so every send is one event: none may be taken twice (duplicated),
// and each must be taken (lost: its producer would wait for ever; the
// watchdog ends the test instead). 10^5 events on 2 threads and on 4; the
// event-state checker holds at the end. Run under TSan by build-tsan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/event_invariants.h"
#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

constexpr unsigned kEvents = 100'000;   // under TSan too: a few seconds
constexpr unsigned kWords = 32;   // of the 64 in the bitmaps: ports up to 2050

struct Config {
    unsigned producers, consumers;
};

class EventDelivery : public EventTest, public ::testing::WithParamInterface<Config> {
protected:
    struct PortCount {
        std::atomic<uint64_t> sent{0}, taken{0};
    };

    void consume(unsigned id, std::vector<PortCount>& count, const std::vector<unsigned>& owner)
    {
        vcpu_info_t& vi = info(id);
        while (!stop.load(std::memory_order_relaxed) && total_taken.load() < kEvents) {
            if (!__atomic_exchange_n(&vi.evtchn_upcall_pending, uint8_t(0), __ATOMIC_SEQ_CST)) {
                std::this_thread::yield();
                continue;
            }
            xen_ulong_t sel = __atomic_exchange_n(&vi.evtchn_pending_sel, xen_ulong_t(0), __ATOMIC_SEQ_CST);
            while (sel) {
                const unsigned w = unsigned(__builtin_ctzl(sel));
                sel &= sel - 1;
                xen_ulong_t bits = __atomic_load_n(&shared->evtchn_pending[w], __ATOMIC_SEQ_CST) &
                                   ~__atomic_load_n(&shared->evtchn_mask[w], __ATOMIC_SEQ_CST);
                while (bits) {
                    const unsigned b = unsigned(__builtin_ctzl(bits));
                    bits &= bits - 1;
                    if (owner[w * 64 + b] != id) continue;   // another vCPU's (Linux: its per-CPU mask)
                    take(id, w * 64 + b, count);
                }
            }
        }
    }

    void take(unsigned id, unsigned port, std::vector<PortCount>& count)
    {
        const xen_ulong_t bit = xen_ulong_t(1) << (port % 64);
        const bool masked_handler = port % 4 == 0;
        if (masked_handler) __atomic_fetch_or(&shared->evtchn_mask[port / 64], bit, __ATOMIC_SEQ_CST);
        if (!(__atomic_fetch_and(&shared->evtchn_pending[port / 64], ~bit, __ATOMIC_SEQ_CST) & bit)) {
            if (masked_handler) unmask(id, port);
            return;   // taken by an earlier pass of this consumer
        }
        PortCount& c = count[port];
        const uint64_t taken = c.taken.fetch_add(1) + 1;
        if (taken > c.sent.load()) duplicated.fetch_add(1);
        total_taken.fetch_add(1);
        if (masked_handler) unmask(id, port);
    }

    void unmask(unsigned id, unsigned port)
    {
        evtchn_unmask_t u{port};
        EventOut o;
        if (evtchn_op(hv(), d->vcpus[id], EVTCHNOP_unmask, Vaddr{uint64_t(&u)}, o) != 0) errors.fetch_add(1);
    }

    void produce(unsigned j, unsigned producers, std::vector<PortCount>& count, const std::vector<unsigned>& ports)
    {
        const unsigned quota = kEvents / producers + (j < kEvents % producers);
        unsigned sent = 0;
        while (sent < quota && !stop.load(std::memory_order_relaxed)) {
            bool any = false;
            for (unsigned p : ports) {
                if (p % producers != j || sent == quota) continue;
                PortCount& c = count[p];
                if (c.taken.load() != c.sent.load()) continue;   // its last event not taken yet
                c.sent.fetch_add(1);
                evtchn_send_t s{p};
                EventOut o;
                if (evtchn_op(hv(), v0(), EVTCHNOP_send, Vaddr{uint64_t(&s)}, o) != 0) errors.fetch_add(1);
                ++sent;
                any = true;
            }
            if (!any) std::this_thread::yield();
        }
    }

    std::atomic<bool> stop{false};
    std::atomic<uint64_t> total_taken{0}, duplicated{0}, errors{0};
};

TEST_P(EventDelivery, NoEventLostOrDuplicated)
{
    const Config cfg = GetParam();
    // Consumer c's ports are 64 i + 1 + c: one in each word, so that no
    // other event of its own can pass by a lost one's word and take it.
    std::vector<unsigned> ports, owner(kEvtchnPorts, ~0u);
    for (unsigned p = 1; p <= (kWords - 1) * 64 + cfg.consumers; ++p) {
        const unsigned c = p % 64 - 1;
        ASSERT_EQ(bind_ipi(c < cfg.consumers ? c : 0), p);
        if (c >= cfg.consumers) continue;
        ports.push_back(p);
        owner[p] = c;
    }
    std::vector<PortCount> count(kEvtchnPorts);

    std::vector<std::thread> threads;
    for (unsigned c = 0; c < cfg.consumers; ++c) threads.emplace_back([&, c] { consume(c, count, owner); });
    for (unsigned j = 0; j < cfg.producers; ++j)
        threads.emplace_back([&, j] { produce(j, cfg.producers, count, ports); });
    // A lost event stops all progress: end the test rather than hang.
    // (No progress for 20 s; the check is about progress, not speed.)
    std::thread watchdog([&] {
        uint64_t last = ~uint64_t(0);
        unsigned still = 0;
        while (total_taken.load() < kEvents) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const uint64_t now = total_taken.load();
            still = now == last ? still + 1 : 0;
            last = now;
            if (still == 200) {
                stop.store(true);
                return;
            }
        }
    });
    for (std::thread& t : threads) t.join();
    watchdog.join();

    EXPECT_FALSE(stop.load()) << "no progress: an event was lost after " << total_taken.load() << " of " << kEvents;
    EXPECT_EQ(total_taken.load(), uint64_t(kEvents));
    EXPECT_EQ(duplicated.load(), 0u);
    EXPECT_EQ(errors.load(), 0u);
    uint64_t sent = 0;
    for (unsigned p : ports) {
        EXPECT_EQ(count[p].sent.load(), count[p].taken.load()) << "port " << p;
        sent += count[p].sent.load();
    }
    EXPECT_EQ(sent, uint64_t(kEvents));
    InvariantReport r;
    EXPECT_TRUE(check_event_invariants(*d, r)) << r[0].reason << " at " << r[0].index;
}

// Two threads: one producer, one consumer. Four: two of each, or three
// producers against one consumer.
INSTANTIATE_TEST_SUITE_P(Threads, EventDelivery,
                         ::testing::Values(Config{1, 1}, Config{2, 2}, Config{3, 1}),
                         [](const auto& p) {
                             return std::to_string(p.param.producers) + "Producers" +
                                    std::to_string(p.param.consumers) + "Consumers";
                         });

} // namespace
} // namespace pvmmu::test
