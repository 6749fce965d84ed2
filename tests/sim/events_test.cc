// Event channels, timers and blocking on the simulated machine
// (sim/machine.h enable_events): guest programs on their own threads issue
// the hypercalls with arguments in guest memory and read the bits in their
// shared_info through their own address space.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>

#include "core/event_ops.h"
#include "sim/guest_context.h"

namespace pvmmu::sim {
namespace {

constexpr uint64_t kShared = 900;   // gpfn of shared_info
constexpr uint64_t kArgs = 901;     // gpfn of each vCPU's argument page (+ vCPU id)
constexpr uint64_t kFifoBlocks = 910;   // FIFO: gpfn of each vCPU's control block (+ vCPU id)
constexpr uint64_t kFifoArray = 912;    // FIFO: the event array's first page

struct SimEvents : ::testing::Test {
    Machine m{MachineConfig{.cpus = 2, .frames = 4096}};
    DomainLayout lay;
    Domain* d = m.create_domain(1, 1024, 2, lay);
    DomainEvents* ev = d ? m.enable_events(*d, lay, kShared) : nullptr;

    template <class T>
    static long op(GuestContext& g, uint64_t hc, uint64_t cmd, T& arg, const DomainLayout& l)
    {
        const Vaddr va = l.va(kArgs + g.vcpu().id);
        if (!g.write_bytes(va, &arg, sizeof(arg))) return -1000;
        const long rc = g.hypercall(hc, cmd, va.v);
        if (!g.read_bytes(va, &arg, sizeof(arg))) return -1001;
        return rc;
    }
    // The guest's view of a bit of its shared_info.
    bool pending(GuestContext& g, unsigned port)
    {
        uint64_t w = 0;
        EXPECT_TRUE(g.load(Vaddr{lay.va(kShared).v + offsetof(shared_info_t, evtchn_pending) + port / 64 * 8}, w));
        return (w >> (port % 64)) & 1;
    }
    uint8_t upcall_pending(GuestContext& g)
    {
        uint64_t w = 0;
        EXPECT_TRUE(g.load(Vaddr{lay.va(kShared).v + g.vcpu().id * sizeof(vcpu_info_t)}, w));
        return uint8_t(w);
    }
};

TEST_F(SimEvents, ABlockedVcpuIsWokenByAnIpiFromAnother)
{
    ASSERT_NE(ev, nullptr);
    std::atomic<unsigned> port{0};
    std::atomic<long> block_rc{-1};
    std::atomic<bool> seen{false};
    m.run(*d, [&](GuestContext& g) {
        if (g.vcpu().id == 1) {
            evtchn_bind_ipi_t b{1, 0};
            ASSERT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_bind_ipi, b, lay), 0);
            port.store(b.port);
            block_rc.store(g.hypercall(__HYPERVISOR_sched_op, SCHEDOP_block, 0));
            seen.store(pending(g, b.port) && upcall_pending(g) == 1);
            return;
        }
        while (!port.load()) std::this_thread::yield();
        evtchn_send_t s{port.load()};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_send, s, lay), 0);
    });
    EXPECT_EQ(block_rc.load(), 0);
    EXPECT_TRUE(seen.load());
}

TEST_F(SimEvents, ASingleShotTimerWakesABlockedVcpuOnItsTimerPort)
{
    ASSERT_NE(ev, nullptr);
    std::atomic<bool> ok{false};
    Domain* solo = d;
    m.run(*solo, [&](GuestContext& g) {
        if (g.vcpu().id != 0) return;
        // The default 100 Hz tick stopped first, or it could be what wakes the vCPU.
        ASSERT_EQ(g.hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_periodic_timer, 0, 0), 0);
        evtchn_bind_virq_t b{VIRQ_TIMER, 0, 0};
        ASSERT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_bind_virq, b, lay), 0);
        const uint64_t deadline = m.system_time_ns() + 2'000'000;
        ASSERT_EQ(g.hypercall(__HYPERVISOR_set_timer_op, deadline), 0);
        ASSERT_EQ(g.hypercall(__HYPERVISOR_sched_op, SCHEDOP_block, 0), 0);
        ok.store(pending(g, b.port) && m.system_time_ns() >= deadline);
    });
    EXPECT_TRUE(ok.load());
}

// The FIFO ABI from the guests' side: vCPU 1 switches the domain to FIFO
// (a control block for each vCPU, one array page of masked events, as
// Linux), binds an IPI, unmasks its word itself and blocks; vCPU 0's send
// links it: vCPU 1 wakes with its control block's READY bit for the default
// priority, HEAD the port, the word PENDING and LINKED, and nothing in the
// 2-level bitmaps.
TEST_F(SimEvents, AFifoEventWakesABlockedVcpu)
{
    ASSERT_NE(ev, nullptr);
    std::atomic<unsigned> port{0};
    std::atomic<bool> seen{false};
    constexpr unsigned kDefault = EVTCHN_FIFO_PRIORITY_DEFAULT;
    m.run(*d, [&](GuestContext& g) {
        if (g.vcpu().id == 1) {
            for (unsigned v = 0; v < 2; ++v) {
                evtchn_init_control_t ic{lay.mfn(kFifoBlocks + v).v, 0, v, 0, {}};
                ASSERT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_init_control, ic, lay), 0);
                EXPECT_EQ(ic.link_bits, EVTCHN_FIFO_LINK_BITS);
            }
            const Vaddr array = lay.va(kFifoArray);
            const uint64_t masked = uint64_t(kFifoMasked) << 32 | kFifoMasked;
            for (unsigned i = 0; i < kPageSize / 8; ++i) ASSERT_TRUE(g.store(Vaddr{array.v + i * 8}, masked));
            evtchn_expand_array_t ea{lay.mfn(kFifoArray).v};
            ASSERT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_expand_array, ea, lay), 0);
            evtchn_bind_ipi_t b{1, 0};
            ASSERT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_bind_ipi, b, lay), 0);
            const Vaddr pair{array.v + b.port / 2 * 8};   // the 8 bytes holding the port's word
            ASSERT_TRUE(g.store(pair, b.port % 2 ? kFifoMasked : uint64_t(kFifoMasked) << 32));
            port.store(b.port);
            ASSERT_EQ(g.hypercall(__HYPERVISOR_sched_op, SCHEDOP_block, 0), 0);
            uint64_t ready = 0, head = 0, words = 0;
            const Vaddr block = lay.va(kFifoBlocks + 1);
            ASSERT_TRUE(g.load(block, ready));
            ASSERT_TRUE(g.load(Vaddr{block.v + 8 + kDefault / 2 * 8}, head));
            ASSERT_TRUE(g.load(pair, words));
            const uint32_t word = uint32_t(words >> (b.port % 2 * 32));
            seen.store(uint32_t(ready) == 1u << kDefault && uint32_t(head >> (kDefault % 2 * 32)) == b.port &&
                       word == (kFifoPending | kFifoLinked) && upcall_pending(g) == 1 && !pending(g, b.port));
            return;
        }
        while (!port.load()) std::this_thread::yield();
        evtchn_send_t s{port.load()};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_send, s, lay), 0);
    });
    EXPECT_TRUE(seen.load());
}

TEST_F(SimEvents, ErrnosReachTheGuest)
{
    ASSERT_NE(ev, nullptr);
    m.run(*d, [&](GuestContext& g) {
        if (g.vcpu().id != 0) return;
        evtchn_bind_virq_t b{VIRQ_TIMER, 5, 0};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_bind_virq, b, lay), -XEN_ENOENT);
        evtchn_init_control_t ic{};   // frame 0: the hypervisor's
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_init_control, ic, lay), -XEN_EINVAL);
        evtchn_expand_array_t ea{lay.mfn(kFifoArray).v};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_expand_array, ea, lay), -XEN_EOPNOTSUPP);
        EXPECT_EQ(g.hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_singleshot_timer, 1, 0), -XEN_EINVAL);
    });
}

} // namespace
} // namespace pvmmu::sim
