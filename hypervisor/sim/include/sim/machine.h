// The simulated SMP machine (docs/design.md §5): the same core on an arena of machine
// memory, one host thread per vCPU, a software walker that sets A and D by locked
// compare-exchange on the live entry as x86 hardware does, a software TLB per CPU,
// and TLB shootdown through per-CPU Boost.Lockfree mailboxes, acknowledged before
// the flushing hypercall returns. Guest code uses it through GuestContext.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "core/domain_builder.h"
#include "core/events.h"
#include "core/grant_table.h"
#include "core/hypercall.h"
#include "sim/arena.h"
#include "sim/tlb.h"

namespace pvmmu::sim {

struct MachineConfig {
    unsigned cpus = 4;
    uint64_t frames = 16384;
    // Platform properties (docs/design.md §5).
    bool tlb_caches_invalid = false;   // a failed walk is cached as a negative entry
    bool coherent_walker = true;       // false: walkers see PTE writes only once cleaned
    unsigned tlb_entries = 64;         // per CPU, a power of two
    HvConfig hv{};
};

enum class Access : uint8_t { Read, Write, Exec };

struct Fault {
    Vaddr va{0};
    Access access = Access::Read;
    bool present = false;    // a protection violation (else: not present)
    bool from_tlb = false;   // raised by a cached entry, which may be stale
};

// Per-CPU event counts; each is written only by its CPU's thread.
struct CpuCounters {
    uint64_t tlb_hits = 0, tlb_misses = 0, walks = 0, faults = 0;
    uint64_t a_set = 0, d_set = 0;             // bits this CPU's walker set
    uint64_t flush_all = 0, flush_page = 0;    // flushes this CPU performed
    uint64_t shootdowns_sent = 0, shootdowns_served = 0;
    uint64_t cleans = 0;
};

class GuestContext;

class Machine final : public Platform {
public:
    explicit Machine(MachineConfig cfg = {});
    ~Machine();
    Machine(const Machine&) = delete;
    Machine& operator=(const Machine&) = delete;

    // A domain built by the core's domain builder; its vCPUs take the next free
    // CPUs. nullptr if refused (errno in *rc).
    Domain* create_domain(DomId id, uint64_t nr_frames, unsigned vcpus, DomainLayout& out,
                          int* rc = nullptr);

    // Gives d event channels, timers and blocking (core/events.h), its
    // shared_info in its own frame `shared_gpfn` (a data frame: the guest
    // reads its bits at layout.va(shared_gpfn); it must not make it a page
    // table). The sim has no interrupts: a guest program looks at its
    // evtchn_upcall_pending itself; SCHEDOP_block and SCHEDOP_poll spin,
    // serving shootdowns and firing the vCPU's due timers, until woken.
    DomainEvents* enable_events(Domain& d, const DomainLayout& layout, uint64_t shared_gpfn);
    // Gives d a grant table (core/grant_table.h) whose frames are its own
    // gpfns [first_gpfn, first_gpfn + nr_frames) (data frames: the guest
    // reads and writes its entries there; setup_table types them writable
    // as it grows) and a maptrack of `handles` handles, the limits cut to
    // that storage. The sim dispatches grant_table_op through the core.
    GrantTable* enable_grants(Domain& d, const DomainLayout& layout, uint64_t first_gpfn, uint32_t nr_frames,
                              uint32_t handles, GrantLimits limits = {});
    // System time in ns since the machine was made (what vcpu_time_info
    // would give; the sim has no TSC).
    uint64_t system_time_ns() const;

    // Runs fn on every vCPU of d, each on its own thread, and returns when all
    // have finished. A finished vCPU keeps serving shootdowns until then.
    void run(Domain& d, const std::function<void(GuestContext&)>& fn);

    Hypervisor& hv() { return hv_; }
    Arena& arena() { return arena_; }
    const MachineConfig& config() const { return cfg_; }
    const CpuCounters& counters(CpuId c) const;
    CpuCounters total_counters() const;

    // Platform.
    void flush_tlbs(CpuMask cpus, FlushRequest req) override;
    void relax() override;
    int copy_from_guest(Vcpu& v, void* dst, Vaddr src, size_t n) override;
    int copy_to_guest(Vcpu& v, Vaddr dst, const void* src, size_t n) override;
    void load_base(Vcpu& v) override;
    void tables_written(Mfn m) override;
    // The event, timer and scheduling hypercalls (core/event_ops.h).
    HcResult arch_hypercall(Vcpu& v, HypercallFrame& f) override;

    struct Cpu;   // one simulated CPU: TLB, mailbox, counters (machine.cc)

private:
    friend class GuestContext;
    Cpu& cpu(CpuId c) { return *cpus_[c]; }
    const Cpu& cpu(CpuId c) const { return *cpus_[c]; }

    // A translation for an access: the host byte at va, or the fault it raises.
    struct Translation {
        uint8_t* host = nullptr;
        Fault fault;
    };
    Translation translate(Cpu& c, Vaddr va, Access a, bool user);
    bool walk(Cpu& c, Vaddr va, Access a, bool user, TlbEntry& out, Fault& fault);
    void serve(Cpu& c);
    void flush_local(Cpu& c, FlushRequest req);
    void bring_online(Cpu& c, Vcpu& v);
    void take_offline(Cpu& c);
    int copy_guest(Vcpu& v, Vaddr va, void* buf, size_t n, bool to_guest);
    uint64_t read_pte(uint64_t* slot);
    void clean(Maddr a);
    Cpu* current();

    MachineConfig cfg_;
    Arena arena_;
    Hypervisor hv_;
    std::vector<std::unique_ptr<Cpu>> cpus_;
    std::unique_ptr<Cpu> control_;   // the initiator for threads bound to no CPU
    std::unique_ptr<std::atomic<uint64_t>[]> shadow_;   // walker-visible PTEs (non-coherent)
    std::deque<Domain> domains_;
    std::deque<std::unique_ptr<DomainEvents>> events_;
    // A grant table and its storage (machine_grants.cc).
    struct Grants {
        std::vector<Mfn> frames;
        std::vector<ActiveGrant> active;
        std::vector<MapTrack> maptrack;
        std::unique_ptr<GrantTable> table;
    };
    std::deque<std::unique_ptr<Grants>> grants_;
    CpuId next_cpu_ = 0;
    uint64_t start_ns_ = 0;   // system time 0, on the host's steady clock
};

} // namespace pvmmu::sim
