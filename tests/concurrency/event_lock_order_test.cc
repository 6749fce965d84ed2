// Two domains bind to each other's ports, send on them and close them, at
// once (EVTCHNOP_bind_interdomain, send, close; core/src/evtchn_op.cc): each
// call holds its own domain's event lock and takes the other's, so taking
// them in any order but domain-id order would deadlock against the mirror
// call (domain 1 waiting for 2's lock while 2 waits for 1's). Both threads
// must finish; a watchdog ends the test with a failure instead of a hang.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "support/event_fixture.h"

namespace pvmmu::test {
namespace {

class EventLockOrder : public EventTest {};

TEST_F(EventLockOrder, TwoDomainsBindingToEachOtherAtOnceBothFinish)
{
    Domain* d2 = second_domain_with_events();
    ASSERT_NE(d2, nullptr);
    // An unbound port in each domain, offered to the other.
    const unsigned p1 = alloc_unbound(d2->id), p2 = alloc_unbound_in(*d2, d->id);

    constexpr unsigned kRounds = 50'000;
    std::atomic<unsigned> finished{0}, ready{0};
    auto binder = [&](Vcpu& v, DomId remote, uint32_t port) {
        ready.fetch_add(1);
        while (ready.load() < 2) {}   // both start together
        for (unsigned i = 0; i < kRounds; ++i) {
            evtchn_bind_interdomain_t b{remote, port, 0};
            EventOut res;
            long rc = evtchn_op(hv(), v, EVTCHNOP_bind_interdomain, Vaddr{uint64_t(&b)}, res);
            evtchn_send_t s{b.local_port};
            if (rc == 0) rc = evtchn_op(hv(), v, EVTCHNOP_send, Vaddr{uint64_t(&s)}, res);
            // Closing the local end leaves the remote port unbound, offered
            // to this domain again: the next round binds it anew.
            evtchn_close_t c{b.local_port};
            if (rc == 0) rc = evtchn_op(hv(), v, EVTCHNOP_close, Vaddr{uint64_t(&c)}, res);
            if (rc != 0) {
                std::fprintf(stderr, "round %u answered %ld\n", i, rc);
                std::abort();
            }
        }
        finished.fetch_add(1);
    };
    std::thread t1(binder, std::ref(v0()), d2->id, p2);
    std::thread t2(binder, std::ref(d2->vcpus[0]), d->id, p1);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (finished.load() < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (finished.load() < 2) {
        std::fprintf(stderr, "deadlock: %u of 2 threads finished in 30 s\n", finished.load());
        std::_Exit(1);   // the threads spin for ever: no join possible
    }
    t1.join();
    t2.join();
}

} // namespace
} // namespace pvmmu::test
