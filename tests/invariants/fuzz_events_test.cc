// The fuzz harness over the event, timer and scheduling hypercalls
// (fuzz/decoder.cc event_args): pseudo-random inputs made of those calls
// from two domains keep every invariant, no call touches the other
// domain's shared_info, and the harness is shown to catch a lost event and
// a write to the other domain when they are injected.
#include <gtest/gtest.h>

#include <pvmmu/abi.h>

#include <random>
#include <vector>

#include "fuzz/harness.h"

namespace pvmmu::test {
namespace {

using fuzz::Inject;
using fuzz::Options;
using fuzz::Outcome;

// Two domains, the first with two vCPUs (the harness's config byte), then 60
// raw hypercalls (op 9) with an event hypercall's number, their argument
// bytes laid out as fuzz/decoder.cc event_args reads them, the values drawn
// at random: small ports, vCPUs and VIRQs, good pointers mostly.
enum class Abi { TwoLevel, Fifo, Any };

class EventInput {
public:
    // Abi::Fifo: each domain first sets the FIFO ABI up (a control block per
    // vCPU, an array page of unmasked events); TwoLevel: no FIFO sub-op.
    explicit EventInput(uint32_t seed, Abi abi = Abi::Any) : rng_(seed), abi_(abi)
    {
        b_.push_back(4 | 8);
        if (abi == Abi::Fifo) {
            fifo_call(0x00, EVTCHNOP_init_control, 0, 10);
            fifo_call(0x40, EVTCHNOP_init_control, 1, 11);
            fifo_call(0x00, EVTCHNOP_expand_array, 0, 12);
            fifo_call(0x80, EVTCHNOP_init_control, 0, 10);
            fifo_call(0x80, EVTCHNOP_expand_array, 0, 12);
        }
        for (unsigned i = 0; i < 60; ++i) call();
    }
    const std::vector<uint8_t>& bytes() const { return b_; }

private:
    void u8(unsigned v) { b_.push_back(uint8_t(v)); }
    void small()
    {
        if (rng_() % 3 == 0) {
            u8(0);
            u8(rng_() % 70);
        } else {
            u8(2);
            u8(rng_() % 4);
        }
    }
    void ptr()
    {
        const unsigned c = rng_() % 16;
        u8(c == 3 ? 4 : c);   // 3 would read a u64
    }
    void ms() { u8(1), u8(rng_()); }   // a deadline or period in whole ms
    // The FIFO frames' bytes (decoder.cc fifo_frames): gpfn `frame` of the
    // caller (frame(), case 0), offset 0, an array page of unmasked events.
    void fifo_frame(unsigned cmd, unsigned frame)
    {
        u8(0), u8(frame);
        u8(cmd == EVTCHNOP_init_control ? 2 : 1);
    }
    void fifo_call(unsigned who, unsigned cmd, unsigned vcpu, unsigned frame)
    {
        u8(9 | who), u8(1), u8(__HYPERVISOR_event_channel_op);
        for (unsigned i = 0; i < 8; ++i) u8(2), u8(i == 3 ? vcpu : 0);   // evtchn_init_control.vcpu
        u8(cmd);
        fifo_frame(cmd, frame);
        u8(4);   // a good pointer
    }
    void call()
    {
        static constexpr uint8_t kOps[] = {__HYPERVISOR_event_channel_op, __HYPERVISOR_event_channel_op,
                                           __HYPERVISOR_set_timer_op, __HYPERVISOR_vcpu_op,
                                           __HYPERVISOR_sched_op};
        const uint8_t op = kOps[rng_() % 5];
        u8(9 | (rng_() & 0xc0));   // RawCall, either domain, either vCPU
        u8(1);                     // a number below 64
        u8(op);
        for (unsigned i = 0; i < 8; ++i) small();
        switch (op) {
        case __HYPERVISOR_event_channel_op: {
            // Mostly what raises events: binds and sends.
            // With the FIFO ABI's sub-ops (init_control, expand_array) on
            // the caller's frames, which the decoder prepares as Linux does.
            static constexpr uint8_t kCmds[] = {EVTCHNOP_bind_ipi, EVTCHNOP_bind_ipi, EVTCHNOP_send,
                                                EVTCHNOP_send, EVTCHNOP_send, EVTCHNOP_bind_virq,
                                                EVTCHNOP_unmask, EVTCHNOP_alloc_unbound,
                                                EVTCHNOP_bind_interdomain, EVTCHNOP_close, EVTCHNOP_status,
                                                EVTCHNOP_bind_vcpu, EVTCHNOP_set_priority, EVTCHNOP_init_control,
                                                EVTCHNOP_expand_array, EVTCHNOP_reset};
            // (TwoLevel: the first 13 only, and no FIFO sub-op drawn at random.)
            unsigned cmd = rng_() % 8 ? kCmds[rng_() % (abi_ == Abi::TwoLevel ? 13 : 15)] : rng_() % 16;
            const bool fifo_op = cmd == EVTCHNOP_init_control || cmd == EVTCHNOP_expand_array;
            if (abi_ == Abi::TwoLevel && fifo_op) cmd = EVTCHNOP_set_priority;
            u8(cmd);
            if (cmd == EVTCHNOP_alloc_unbound || cmd == EVTCHNOP_status || cmd == EVTCHNOP_reset ||
                cmd == EVTCHNOP_bind_interdomain)
                u8(rng_()), u8(rng_());
            if (cmd == EVTCHNOP_init_control || cmd == EVTCHNOP_expand_array) fifo_frame(cmd, rng_() % 24);
            ptr();
            break;
        }
        case __HYPERVISOR_set_timer_op:
            ms();
            break;
        case __HYPERVISOR_vcpu_op:
            u8(1 + rng_() % 3), u8(rng_());   // a timer sub-op
            u8(rng_());                       // the vCPU
            ms();
            ptr();
            break;
        default:
            u8(rng_() % 5);                   // sched_op cmd
            ptr();                            // the ports
            u8(1 + rng_() % 3), u8(rng_());   // nr_ports 0..4
            if (rng_() % 2) u8(1); else u8(0), u8(rng_());
            ptr();
        }
    }

    std::mt19937 rng_;
    Abi abi_;
    std::vector<uint8_t> b_;
};

std::vector<uint8_t> event_input(uint32_t seed, Abi abi = Abi::Any) { return EventInput(seed, abi).bytes(); }

} // namespace
Outcome run(const std::vector<uint8_t>& b, Options opt = {}) { return fuzz::run_input(b.data(), b.size(), opt); }
namespace {

TEST(FuzzEvents, RandomEventCallsKeepEveryInvariant)
{
    uint64_t calls = 0;
    for (uint32_t seed = 0; seed < 300; ++seed) {
        const Outcome o = run(event_input(seed));
        ASSERT_TRUE(o.ok) << "seed " << seed << ": " << o.failure;
        calls += o.calls;
    }
    EXPECT_GT(calls, 10'000u);
}

TEST(FuzzEvents, RandomEventCallsOnTheFifoAbiKeepEveryInvariant)
{
    for (uint32_t seed = 0; seed < 300; ++seed) {
        const Outcome o = run(event_input(seed, Abi::Fifo));
        ASSERT_TRUE(o.ok) << "seed " << seed << ": " << o.failure;
    }
}

TEST(FuzzEvents, ALostEventIsCaught)
{
    Options opt;
    opt.inject = Inject::DropSelectorsAfterEachCall;
    unsigned caught = 0;
    for (uint32_t seed = 0; seed < 50; ++seed) {
        const Outcome o = run(event_input(seed, Abi::TwoLevel), opt);
        if (!o.ok) {
            EXPECT_NE(o.failure.find("event lost"), std::string::npos) << o.failure;
            ++caught;
        }
    }
    EXPECT_GT(caught, 10u);   // the inputs that raised an event at all
}

TEST(FuzzEvents, ALostFifoEventIsCaught)
{
    Options opt;
    opt.inject = Inject::DropSelectorsAfterEachCall;   // READY words cleared
    unsigned caught = 0;
    for (uint32_t seed = 0; seed < 100; ++seed) {
        const Outcome o = run(event_input(seed, Abi::Fifo), opt);
        if (!o.ok) {
            EXPECT_NE(o.failure.find("event lost"), std::string::npos) << o.failure;
            ++caught;
        }
    }
    EXPECT_GT(caught, 5u);   // the inputs that linked an event at all
}

TEST(FuzzEvents, AWriteToTheOtherDomainIsCaught)
{
    Options opt;
    opt.inject = Inject::SignalOtherDomain;
    const Outcome o = run(event_input(1), opt);
    EXPECT_FALSE(o.ok);
    EXPECT_NE(o.failure.find("another domain's shared_info"), std::string::npos) << o.failure;
}

TEST(FuzzEvents, AWriteToTheOtherDomainsFifoFramesIsCaught)
{
    Options opt;
    opt.inject = Inject::SignalOtherDomainFifo;
    const Outcome o = run(event_input(1, Abi::Fifo), opt);
    EXPECT_FALSE(o.ok);
    EXPECT_NE(o.failure.find("another domain's FIFO event frames"), std::string::npos) << o.failure;
}

} // namespace
} // namespace pvmmu::test
