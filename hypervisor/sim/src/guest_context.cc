// What guest code on one vCPU of the simulated machine sees; see
// sim/guest_context.h.
#include "sim/guest_context.h"

#include <atomic>

#include "core/hypercall.h"
#include "machine_cpu.h"

namespace pvmmu::sim {

GuestContext::GuestContext(Machine& m, Vcpu& v) : m_(m), v_(v) { m_.bring_online(m_.cpu(v.cpu), v); }

GuestContext::~GuestContext() { m_.take_offline(m_.cpu(v_.cpu)); }

const CpuCounters& GuestContext::counters() const { return m_.cpu(v_.cpu).counters; }

void GuestContext::poll() { m_.serve(m_.cpu(v_.cpu)); }

bool GuestContext::try_access(Vaddr va, Access a, Fault& fault)
{
    poll();
    const Machine::Translation t = m_.translate(m_.cpu(v_.cpu), va, a, true);
    fault = t.fault;
    return t.host != nullptr;
}

template <class Op>
bool GuestContext::access(Vaddr va, Access a, Op&& op)
{
    Machine::Cpu& c = m_.cpu(v_.cpu);
    for (unsigned attempt = 0; attempt < kMaxWalkRetries; ++attempt) {
        poll();
        const Machine::Translation t = m_.translate(c, va, a, true);
        if (t.host) {
            op(reinterpret_cast<uint64_t*>(t.host));
            return true;
        }
        ++c.counters.faults;
        if (!handler_ || !handler_(*this, t.fault)) return false;
    }
    return false;
}

bool GuestContext::load(Vaddr va, uint64_t& out)
{
    return access(va, Access::Read, [&](uint64_t* p) { out = std::atomic_ref<uint64_t>(*p).load(std::memory_order_acquire); });
}

bool GuestContext::store(Vaddr va, uint64_t val)
{
    return access(va, Access::Write, [&](uint64_t* p) { std::atomic_ref<uint64_t>(*p).store(val, std::memory_order_release); });
}

// What the pointer skips is the TLB, not atomicity: its user stores through it
// atomically, as everything else touches machine memory, since other vCPUs
// may share the guest memory at hand. It stays right only while the mapping
// the caller promises not to change is there (a vCPU's own scratch pages);
// meanwhile a frame mapped writable cannot become a page table (type counts),
// so the walker never reads what is stored through it.
uint64_t* GuestContext::direct(Vaddr va, size_t bytes)
{
    if ((va.v & 7) || bytes == 0) return nullptr;
    Machine::Cpu& c = m_.cpu(v_.cpu);
    uint8_t* first = nullptr;
    for (uint64_t off = 0; off < bytes; off += kPageSize - ((va.v + off) & (kPageSize - 1))) {
        poll();
        const Machine::Translation t = m_.translate(c, Vaddr{va.v + off}, Access::Write, true);
        if (!t.host || (first && t.host != first + off)) return nullptr;
        if (!first) first = t.host;
    }
    return reinterpret_cast<uint64_t*>(first);
}

bool GuestContext::cmpxchg(Vaddr va, uint64_t& expected, uint64_t desired, bool& swapped)
{
    return access(va, Access::Write, [&](uint64_t* p) {
        swapped = std::atomic_ref<uint64_t>(*p).compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
    });
}

bool GuestContext::write_bytes(Vaddr va, const void* src, size_t n)
{
    const uint8_t* p = static_cast<const uint8_t*>(src);
    for (size_t i = 0; i < n; ++i)
        if (!access(Vaddr{va.v + i}, Access::Write, [&](uint64_t* h) {
                std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(h)).store(p[i], std::memory_order_relaxed);
            }))
            return false;
    return true;
}

bool GuestContext::read_bytes(Vaddr va, void* dst, size_t n)
{
    uint8_t* p = static_cast<uint8_t*>(dst);
    for (size_t i = 0; i < n; ++i)
        if (!access(Vaddr{va.v + i}, Access::Read, [&](uint64_t* h) {
                p[i] = std::atomic_ref<uint8_t>(*reinterpret_cast<uint8_t*>(h)).load(std::memory_order_relaxed);
            }))
            return false;
    return true;
}

bool GuestContext::exec(Vaddr va)
{
    return access(va, Access::Exec, [](uint64_t*) {});
}

long GuestContext::hypercall(uint64_t op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                             unsigned* continuations)
{
    return hypercall_to_completion(m_.hv(), v_, HypercallFrame{op, {a0, a1, a2, a3, a4, 0}}, continuations);
}

void GuestContext::clean(Vaddr va)
{
    Machine::Cpu& c = m_.cpu(v_.cpu);
    ++c.counters.cleans;
    const Machine::Translation t = m_.translate(c, va, Access::Read, false);
    if (t.host) m_.clean(Maddr{uint64_t(t.host - m_.hv().mem().base)});
}

} // namespace pvmmu::sim
