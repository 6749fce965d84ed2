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

TEST_F(SimEvents, ErrnosReachTheGuest)
{
    ASSERT_NE(ev, nullptr);
    m.run(*d, [&](GuestContext& g) {
        if (g.vcpu().id != 0) return;
        evtchn_bind_virq_t b{VIRQ_TIMER, 5, 0};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_bind_virq, b, lay), -XEN_ENOENT);
        evtchn_init_control_t ic{};
        EXPECT_EQ(op(g, __HYPERVISOR_event_channel_op, EVTCHNOP_init_control, ic, lay), -XEN_ENOSYS);
        EXPECT_EQ(g.hypercall(__HYPERVISOR_vcpu_op, VCPUOP_stop_singleshot_timer, 1, 0), -XEN_EINVAL);
    });
}

} // namespace
} // namespace pvmmu::sim
