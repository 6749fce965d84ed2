// The simulated SMP machine; see sim/machine.h. Its CPUs are machine_cpu.h,
// what guest code on one of them sees guest_context.cc.
#include "sim/machine.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "machine_cpu.h"
#include "sim/guest_context.h"

namespace pvmmu::sim {

static thread_local Machine::Cpu* tls_cpu = nullptr;

Machine::Machine(MachineConfig cfg)
    : cfg_(cfg), arena_(cfg.frames), hv_(arena_.mem(), arena_.frames(), arena_.m2p(), *this, cfg.hv)
{
    if (cfg_.cpus == 0 || cfg_.cpus > kMaxCpus) cfg_.cpus = cfg_.cpus ? kMaxCpus : 1;
    for (CpuId i = 0; i < cfg_.cpus; ++i) {
        cpus_.push_back(std::make_unique<Cpu>(cfg_.tlb_entries));
        cpus_.back()->id = i;
    }
    control_ = std::make_unique<Cpu>(1);
    control_->id = kControl;
    if (!cfg_.coherent_walker)
        shadow_ = std::make_unique<std::atomic<uint64_t>[]>(cfg_.frames * kEntriesPerTable);
}

Machine::~Machine() = default;

Machine::Cpu* Machine::current() { return tls_cpu; }

Domain* Machine::create_domain(DomId id, uint64_t nr_frames, unsigned vcpus, DomainLayout& out, int* rc)
{
    int r = -XEN_EINVAL;
    Domain* result = nullptr;
    if (next_cpu_ + vcpus <= cfg_.cpus) {
        Domain& d = domains_.emplace_back();
        DomainSpec spec;
        spec.id = id;
        spec.nr_vcpus = vcpus;
        spec.first_cpu = next_cpu_;
        spec.first = arena_.allocate(nr_frames);
        spec.nr_frames = nr_frames;
        r = spec.first.v == ~0ull ? -XEN_ENOMEM : build_domain(hv_, d, spec, out);
        if (r == 0) {
            next_cpu_ += vcpus;
            result = &d;
            // A non-coherent walker starts from what the builder wrote.
            if (shadow_)
                for (uint64_t i = 0; i < out.nr_frames * kEntriesPerTable; ++i)
                    shadow_[out.first.v * kEntriesPerTable + i].store(
                        hv_.mem().table(out.first)[i], std::memory_order_relaxed);
        }
    }
    if (rc) *rc = r;
    return result;
}

const CpuCounters& Machine::counters(CpuId c) const { return cpu(c).counters; }

CpuCounters Machine::total_counters() const
{
    CpuCounters t;
    for (CpuId i = 0; i < cfg_.cpus; ++i) {
        const CpuCounters& c = cpu(i).counters;
        t.tlb_hits += c.tlb_hits, t.tlb_misses += c.tlb_misses, t.walks += c.walks;
        t.faults += c.faults, t.a_set += c.a_set, t.d_set += c.d_set;
        t.flush_all += c.flush_all, t.flush_page += c.flush_page;
        t.shootdowns_sent += c.shootdowns_sent, t.shootdowns_served += c.shootdowns_served;
        t.cleans += c.cleans;
    }
    return t;
}

// --- TLB maintenance and shootdown -------------------------------------------

void Machine::flush_local(Cpu& c, FlushRequest req)
{
    if (req.kind == FlushKind::Page) {
        c.tlb.flush_page(req.va.v >> kPageShift);
        ++c.counters.flush_page;
        return;
    }
    const uint64_t t = hv_.clock().begin_flush();
    c.tlb.flush_all();
    hv_.clock().record_flush(c.id, t);
    ++c.counters.flush_all;
}

void Machine::serve(Cpu& c)
{
    if (c.pending.load(std::memory_order_acquire) == 0) return;
    Message m;
    while (c.mailbox.pop(m)) {
        c.pending.fetch_sub(1, std::memory_order_acq_rel);
        flush_local(c, m.req);
        ++c.counters.shootdowns_served;
        Cpu& from = m.from == kControl ? *control_ : cpu(m.from);
        from.acked[c.id].store(m.ticket, std::memory_order_release);
    }
}

void Machine::relax()
{
    if (Cpu* c = current()) serve(*c);
    std::this_thread::yield();
}

void Machine::flush_tlbs(CpuMask cpus, FlushRequest req)
{
    Cpu* self = current();
    Cpu& sender = self ? *self : *control_;
    const uint32_t from = self ? self->id : kControl;
    // An offline CPU is skipped: it flushes its whole TLB before it comes online.
    CpuMask waiting;
    for (CpuId t = 0; t < cfg_.cpus; ++t) {
        if (!cpus.has(t)) continue;
        Cpu& target = cpu(t);
        if (&target == self) {
            flush_local(target, req);
            continue;
        }
        if (!target.online.load(std::memory_order_seq_cst)) continue;
        const Message m{req, from, ++sender.sent[t]};
        while (!target.mailbox.push(m)) relax();
        target.pending.fetch_add(1, std::memory_order_acq_rel);
        ++sender.counters.shootdowns_sent;
        waiting.set(t);
    }
    for (CpuId t = 0; t < cfg_.cpus; ++t) {
        if (!waiting.has(t)) continue;
        while (sender.acked[t].load(std::memory_order_acquire) < sender.sent[t] &&
               cpu(t).online.load(std::memory_order_acquire))
            relax();
    }
}

void Machine::load_base(Vcpu& v)
{
    // The sim's TLB is untagged: a new root flushes it, as a CR3 write does.
    Cpu& c = cpu(v.cpu);
    if (&c == current()) flush_local(c, FlushRequest{});
}

void Machine::bring_online(Cpu& c, Vcpu& v)
{
    serve(c);
    flush_local(c, FlushRequest{});
    c.vcpu = &v;
    tls_cpu = &c;
    c.online.store(true, std::memory_order_seq_cst);
}

void Machine::take_offline(Cpu& c)
{
    c.online.store(false, std::memory_order_seq_cst);
    // Acknowledge whatever arrived: senders stop waiting once they see us offline,
    // and we flush everything when we come back anyway.
    c.pending.fetch_add(1);
    serve(c);
    c.pending.fetch_sub(1);
    serve(c);
    c.vcpu = nullptr;
    tls_cpu = nullptr;
}

// --- The walker ----------------------------------------------------------------

uint64_t Machine::read_pte(uint64_t* slot)
{
    if (!shadow_) return load_entry(slot);
    const uint64_t off = uint64_t(reinterpret_cast<uint8_t*>(slot) - hv_.mem().base) / sizeof(uint64_t);
    return shadow_[off].load(std::memory_order_acquire);
}

void Machine::clean(Maddr a)
{
    if (!shadow_ || !hv_.mem().valid(a.mfn())) return;
    // One 64-byte line: eight entries become visible to walkers.
    const uint64_t first = (a.v & ~uint64_t(63)) / sizeof(uint64_t);
    uint64_t* mem = hv_.mem().table(Mfn{0});
    for (uint64_t i = first; i < first + 8; ++i)
        shadow_[i].store(load_entry(&mem[i]), std::memory_order_release);
}

void Machine::tables_written(Mfn m)
{
    if (!shadow_) return;
    for (unsigned line = 0; line < kPageSize; line += 64) clean(Maddr{maddr_of(m).v + line});
}

// Sets `bit` in the live entry with a locked compare-exchange, as the hardware
// walker does. Changed: this walker set it; Already: someone else had; Stale:
// the entry changed in some other way since it was read, and the walk restarts.
enum class HwBit { Changed, Already, Stale };

static HwBit set_hw_bit(uint64_t* slot, uint64_t seen, uint64_t bit)
{
    std::atomic_ref<uint64_t> e(*slot);
    uint64_t cur = seen;
    for (;;) {
        if ((cur ^ seen) & ~pte_bit::AD) return HwBit::Stale;
        if (cur & bit) return HwBit::Already;
        if (e.compare_exchange_weak(cur, cur | bit, std::memory_order_acq_rel)) return HwBit::Changed;
    }
}

bool Machine::walk(Cpu& c, Vaddr va, Access a, bool user, TlbEntry& out, Fault& fault)
{
    ++c.counters.walks;
    fault = Fault{va, a, false, false};
    const Vcpu* v = c.vcpu;
    if (!v || !v->has_table) return false;
    for (unsigned attempt = 0; attempt < kMaxWalkRetries; ++attempt) {
        Mfn m = v->guest_table;
        bool rw = true, us = true, nx = false, restart = false;
        uint64_t e = 0;
        uint64_t* slot = nullptr;
        for (unsigned l = 4; l >= 1; --l) {
            slot = hv_.mem().table(m) + table_index(va, Level(uint8_t(l)));
            e = read_pte(slot);
            if (!(e & pte_bit::P) || !hv_.mem().valid(Pte{e}.mfn())) {
                if (cfg_.tlb_caches_invalid)
                    c.tlb.insert(TlbEntry{va.v >> kPageShift, 0, true, true});
                return false;
            }
            rw &= bool(e & pte_bit::RW);
            us &= bool(e & pte_bit::US);
            nx |= bool(e & pte_bit::NX);
            if (!(e & pte_bit::A)) {
                const HwBit r = set_hw_bit(slot, e, pte_bit::A);
                if (r == HwBit::Stale) {
                    restart = true;
                    break;
                }
                if (shadow_) clean(Maddr{uint64_t(reinterpret_cast<uint8_t*>(slot) - hv_.mem().base)});
                e |= pte_bit::A;
                c.counters.a_set += r == HwBit::Changed;
            }
            if (l > 1) m = Pte{e}.mfn();
        }
        if (restart) {   // a writer holds the table: let it finish
            std::this_thread::yield();
            continue;
        }
        out = TlbEntry{va.v >> kPageShift, Pte{e}.mfn().v, true, false, rw, us, nx, bool(e & pte_bit::D)};
        const bool denied = (user && !us) || (a == Access::Write && !rw) || (a == Access::Exec && nx);
        if (!denied && a == Access::Write && !(e & pte_bit::D)) {
            const HwBit r = set_hw_bit(slot, e, pte_bit::D);
            if (r == HwBit::Stale) continue;
            if (shadow_) clean(Maddr{uint64_t(reinterpret_cast<uint8_t*>(slot) - hv_.mem().base)});
            out.dirty = true;
            c.counters.d_set += r == HwBit::Changed;
        }
        // Cached even when the access is denied: the permissions come with it.
        c.tlb.insert(out);
        fault.present = true;
        return !denied;
    }
    return false;
}

Machine::Translation Machine::translate(Cpu& c, Vaddr va, Access a, bool user)
{
    Translation t;
    t.fault = Fault{va, a, false, false};
    if (!canonical(va)) return t;
    TlbEntry* hit = c.tlb.lookup(va.v >> kPageShift);
    if (hit) {
        ++c.counters.tlb_hits;
        if (hit->negative) {
            t.fault.from_tlb = true;
            return t;
        }
        const bool denied = (user && !hit->us) || (a == Access::Write && !hit->rw) ||
                            (a == Access::Exec && hit->nx);
        if (denied) {
            t.fault.present = true;
            t.fault.from_tlb = true;
            return t;
        }
        // A write through an entry cached clean walks again to set D (as x86 does).
        if (!(a == Access::Write && !hit->dirty)) {
            t.host = static_cast<uint8_t*>(hv_.mem().frame(Mfn{hit->mfn})) + (va.v & (kPageSize - 1));
            return t;
        }
    } else {
        ++c.counters.tlb_misses;
    }
    TlbEntry e;
    if (walk(c, va, a, user, e, t.fault))
        t.host = static_cast<uint8_t*>(hv_.mem().frame(Mfn{e.mfn})) + (va.v & (kPageSize - 1));
    return t;
}

// --- Hypervisor access to guest memory -------------------------------------------

int Machine::copy_guest(Vcpu& v, Vaddr va, void* buf, size_t n, bool to_guest)
{
    Cpu* c = current();
    if (!c || c->vcpu != &v) return -XEN_EFAULT;
    uint8_t* p = static_cast<uint8_t*>(buf);
    while (n > 0) {
        const size_t in_page = kPageSize - (va.v & (kPageSize - 1));
        const size_t k = n < in_page ? n : in_page;
        // The hypervisor accesses in supervisor mode: US is not needed, RW is (CR0.WP).
        const Translation t = translate(*c, va, to_guest ? Access::Write : Access::Read, false);
        if (!t.host) return -XEN_EFAULT;
        // Other vCPUs may touch the same guest memory: access it atomically, a
        // word at a time where the guest side is aligned, else a byte at a time.
        size_t i = 0;
        if ((va.v & 7) == 0)
            for (; i + 8 <= k; i += 8) {
                std::atomic_ref<uint64_t> g(*reinterpret_cast<uint64_t*>(t.host + i));
                uint64_t w;
                if (to_guest) std::memcpy(&w, p + i, 8), g.store(w, std::memory_order_relaxed);
                else w = g.load(std::memory_order_relaxed), std::memcpy(p + i, &w, 8);
            }
        for (; i < k; ++i) {
            std::atomic_ref<uint8_t> g(t.host[i]);
            if (to_guest) g.store(p[i], std::memory_order_relaxed);
            else p[i] = g.load(std::memory_order_relaxed);
        }
        p += k;
        va.v += k;
        n -= k;
    }
    return 0;
}

int Machine::copy_from_guest(Vcpu& v, void* dst, Vaddr src, size_t n) { return copy_guest(v, src, dst, n, false); }

int Machine::copy_to_guest(Vcpu& v, Vaddr dst, const void* src, size_t n)
{
    return copy_guest(v, dst, const_cast<void*>(src), n, true);
}

// --- Running guest code ------------------------------------------------------------

void Machine::run(Domain& d, const std::function<void(GuestContext&)>& fn)
{
    std::atomic<unsigned> finished{0};
    std::vector<std::thread> threads;
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        threads.emplace_back([&, i] {
            GuestContext g(*this, d.vcpus[i]);
            fn(g);
            finished.fetch_add(1, std::memory_order_acq_rel);
            while (finished.load(std::memory_order_acquire) < d.nr_vcpus) {
                g.poll();
                std::this_thread::yield();
            }
        });
    }
    for (auto& t : threads) t.join();
}

} // namespace pvmmu::sim
