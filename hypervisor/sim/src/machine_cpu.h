// One CPU of the simulated machine (sim/machine.h), private to its sources:
// its TLB, the vCPU it runs, its shootdown mailbox and its counters.
#pragma once

#include <atomic>

#include <boost/lockfree/queue.hpp>

#include "sim/machine.h"

namespace pvmmu::sim {

// A shootdown: what to flush, and the ticket the sender waits to see acknowledged.
struct Message {
    FlushRequest req;
    uint32_t from;     // sender's CPU slot (kControl for an unbound thread)
    uint64_t ticket;
};

constexpr uint32_t kControl = kMaxCpus;   // slot of the control initiator
constexpr unsigned kMaxWalkRetries = 1000;

struct Machine::Cpu {
    explicit Cpu(unsigned tlb_entries) : tlb(tlb_entries) {}

    CpuId id = 0;
    Tlb tlb;
    Vcpu* vcpu = nullptr;
    std::atomic<bool> online{false};
    // Mailbox: multi-producer, consumed by this CPU at its interrupt points.
    boost::lockfree::queue<Message, boost::lockfree::capacity<2 * kMaxCpus>> mailbox;
    std::atomic<uint32_t> pending{0};
    // As a sender: the last ticket sent to each target and acknowledged by it.
    uint64_t sent[kMaxCpus] = {};
    std::atomic<uint64_t> acked[kMaxCpus] = {};
    CpuCounters counters;
};

} // namespace pvmmu::sim
