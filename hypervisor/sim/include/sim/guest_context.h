// What guest code running on one vCPU of the simulated machine sees: memory at
// guest virtual addresses (through this CPU's TLB and walker, so A/D bits and
// faults are real), a fault handler, the hypercall transport, cache cleaning for
// non-coherent walkers, and an interrupt point that serves TLB shootdowns.
// Constructing one binds the calling thread to the vCPU's CPU.
#pragma once

#include <functional>

#include "sim/machine.h"

namespace pvmmu::sim {

class GuestContext {
public:
    // Returns true to retry the access (the handler fixed something), false to
    // give up (the access then reports failure).
    using FaultHandler = std::function<bool(GuestContext&, const Fault&)>;

    GuestContext(Machine& m, Vcpu& v);
    ~GuestContext();
    GuestContext(const GuestContext&) = delete;
    GuestContext& operator=(const GuestContext&) = delete;

    // 64-bit accesses at an 8-byte aligned guest virtual address. false: the
    // access faulted and the handler (if any) gave up; nothing was accessed.
    [[nodiscard]] bool load(Vaddr va, uint64_t& out);
    [[nodiscard]] bool store(Vaddr va, uint64_t val);
    // [va, va + bytes) (va 8-byte aligned) as one host pointer into machine
    // memory, translated now as this vCPU's first write to each page would be
    // (A and D set, permissions checked; no fault handler). nullptr if a page
    // is not mapped writable or the frames are not consecutive. Access it
    // atomically, as all machine memory (the guest library's MmuBatch stores
    // with std::atomic_ref), and only while its mapping stays as it is: the
    // pointer skips the TLB and does not see a later change.
    [[nodiscard]] uint64_t* direct(Vaddr va, size_t bytes);
    // Atomic compare-exchange; `expected` receives the value seen.
    [[nodiscard]] bool cmpxchg(Vaddr va, uint64_t& expected, uint64_t desired, bool& swapped);
    // Byte copies to and from guest memory, as the guest's own accesses (they set
    // A/D and take the handler on faults); the usual way to lay out request arrays.
    [[nodiscard]] bool write_bytes(Vaddr va, const void* src, size_t n);
    [[nodiscard]] bool read_bytes(Vaddr va, void* dst, size_t n);
    // An instruction fetch check (NX) at va.
    [[nodiscard]] bool exec(Vaddr va);

    // One attempt without the handler: the fault, if any.
    bool try_access(Vaddr va, Access a, Fault& fault);

    void set_fault_handler(FaultHandler h) { handler_ = std::move(h); }

    // Hypercall transport: issued until complete (continuations served here).
    long hypercall(uint64_t op, uint64_t a0 = 0, uint64_t a1 = 0, uint64_t a2 = 0,
                   uint64_t a3 = 0, uint64_t a4 = 0, unsigned* continuations = nullptr);

    // Make a page-table write at va visible to walkers (non-coherent walker
    // property; a counted no-op on a coherent machine).
    void clean(Vaddr va);

    // An interrupt point: serve pending shootdowns.
    void poll();

    Machine& machine() { return m_; }
    Vcpu& vcpu() { return v_; }
    Domain& domain() { return *v_.domain; }
    const CpuCounters& counters() const;

private:
    template <class Op>
    bool access(Vaddr va, Access a, Op&& op);

    Machine& m_;
    Vcpu& v_;
    FaultHandler handler_;
};

} // namespace pvmmu::sim
