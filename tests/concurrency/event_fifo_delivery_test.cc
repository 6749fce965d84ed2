// The FIFO event ABI under real threads (core/src/evtchn_fifo.cc): producers
// send on IPI ports through EVTCHNOP_send, so the hypervisor links events at
// the queues' tails while each consumer thread, a vCPU's guest, takes them
// from the heads as Linux's events_fifo.c does (support/fifo_guest.h). The
// ports are spread over three priorities; for a quarter of them the guest
// masks the port while it handles the event and then unmasks it itself, or
// through EVTCHNOP_unmask when an event came meanwhile, so the hypervisor's
// link races the guest's mask, unlink and unmask on the same words (BUSY).
// A port is sent again only once its last event was taken, so every send is
// one event: none may be taken twice, each must be taken (a lost one stops
// its producer; the watchdog ends the test instead). 10^5 events on 2
// threads and on 4; the event-state checker holds at the end. Run under
// TSan by build-tsan.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/event_invariants.h"
#include "support/fifo_fixture.h"

namespace pvmmu::test {
namespace {

constexpr unsigned kEvents = 100'000;
constexpr unsigned kPortsPerConsumer = 48;
constexpr unsigned kPriorities[3] = {EVTCHN_FIFO_PRIORITY_DEFAULT, 2, EVTCHN_FIFO_PRIORITY_MIN};

struct Config {
    unsigned producers, consumers;
};

class FifoDelivery : public FifoTest, public ::testing::WithParamInterface<Config> {
protected:
    struct PortCount {
        std::atomic<uint64_t> sent{0}, taken{0};
    };

    void consume(unsigned id, std::vector<PortCount>& count)
    {
        FifoGuest g = guest(id);
        vcpu_info_t& vi = info(id);
        while (!stop.load(std::memory_order_relaxed) && total_taken.load() < kEvents) {
            if (!__atomic_exchange_n(&vi.evtchn_upcall_pending, uint8_t(0), __ATOMIC_SEQ_CST)) {
                std::this_thread::yield();
                continue;
            }
            g.handle_events([&](unsigned port) { take(g, id, port, count); });
        }
        if (g.bad_heads) errors.fetch_add(1);
    }

    void take(FifoGuest& g, unsigned id, unsigned port, std::vector<PortCount>& count)
    {
        const bool masked_handler = port % 4 == 0;
        if (masked_handler) g.mask(port);
        PortCount& c = count[port];
        if (c.taken.fetch_add(1) + 1 > c.sent.load()) duplicated.fetch_add(1);
        total_taken.fetch_add(1);
        if (masked_handler && !g.unmask_local(port)) {
            evtchn_unmask_t u{port};
            EventOut o;
            if (evtchn_op(hv(), d->vcpus[id], EVTCHNOP_unmask, Vaddr{uint64_t(&u)}, o) != 0) errors.fetch_add(1);
        }
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

TEST_P(FifoDelivery, NoEventLostOrDuplicated)
{
    const Config cfg = GetParam();
    d->nr_vcpus = cfg.consumers;
    switch_to_fifo(1, cfg.consumers);
    std::vector<unsigned> ports;
    for (unsigned i = 0; i < kPortsPerConsumer * cfg.consumers; ++i) {
        const unsigned c = i % cfg.consumers;
        const unsigned p = unmasked_ipi(c);
        ASSERT_EQ(set_priority(p, kPriorities[i % 3]), 0);
        ports.push_back(p);
    }
    std::vector<PortCount> count(kEvtchnPorts);

    std::vector<std::thread> threads;
    for (unsigned c = 0; c < cfg.consumers; ++c) threads.emplace_back([&, c] { consume(c, count); });
    for (unsigned j = 0; j < cfg.producers; ++j)
        threads.emplace_back([&, j] { produce(j, cfg.producers, count, ports); });
    // A lost event stops all progress: end the test rather than hang (no
    // progress for 20 s; the check is about progress, not speed).
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
    // Nothing is left on any queue.
    for (unsigned c = 0; c < cfg.consumers; ++c) EXPECT_EQ(guest(c).handle_events([](unsigned) {}), 0u);
    d->nr_vcpus = 2;
}

// Two threads: one producer, one consumer. Four: two of each, or three
// producers against one consumer.
INSTANTIATE_TEST_SUITE_P(Threads, FifoDelivery, ::testing::Values(Config{1, 1}, Config{2, 2}, Config{3, 1}),
                         [](const auto& p) {
                             return std::to_string(p.param.producers) + "Producers" +
                                    std::to_string(p.param.consumers) + "Consumers";
                         });

} // namespace
} // namespace pvmmu::test
