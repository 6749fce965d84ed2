// A guest test program on the simulated machine: builds the machine and the
// domain(s) its TestConfig asks for, runs the runtime on every vCPU thread, and
// exits with the outcome's code (0 success, 3 skip, 4 error, 5 failure) — the
// console's last line says the same, which is what `pvmmu run` reads.
//   guest-<name> [--cpus N] [--interleave] [--tlb-caches-invalid] [--info] [KEY=VALUE...]
// --interleave makes every vCPU thread yield the host CPU on each hypercall
// entry: the vCPUs are threads, and on a host with fewer free cores than vCPUs
// they rarely run at the same time, so the window between a guest's read of an
// entry and the hypervisor's install (where an A/D bit can be lost) would almost
// never see another vCPU's write. It costs a host yield per hypercall: for
// demonstrating races, not for timing.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "rt_platform.h"
#include "sim_cpu.h"

namespace pvmmu::guest {

namespace {

struct State {
    sim::Machine* machine = nullptr;
    Domain* domain = nullptr;
    Domain* foreign = nullptr;
    DomainLayout foreign_layout;
    std::mutex console;
    std::vector<const char*> args;   // the KEY=VALUE words (rt::arg)
    bool interleave = false;
};
State state;
thread_local Cpu* tls_cpu = nullptr;

constexpr uint64_t kForeignFrames = 64;

Access access_of(sim::Access a)
{
    return a == sim::Access::Write ? Access::Write : a == sim::Access::Exec ? Access::Exec : Access::Read;
}

int exit_code(Outcome o)
{
    switch (o) {
    case Outcome::Success: return 0;
    case Outcome::Skip: return 3;
    case Outcome::Error: return 4;
    default: return 5;
    }
}

int usage(FILE* f, int rc)
{
    std::fprintf(f, "usage: guest-<name> [--cpus N] [--interleave] [--tlb-caches-invalid] [--info] [KEY=VALUE...]\n"
                    "  --cpus N   run with N vCPUs instead of the test's default\n"
                    "  --interleave  yield the host CPU at every hypercall entry (races show on a busy host)\n"
                    "  --tlb-caches-invalid  the TLB caches failed walks (a platform property, docs/design.md §5; overrides the program's)\n"
                    "  --info     print the test's title and configuration, run nothing\n"
                    "  KEY=VALUE  arguments for the program (rt::arg)\n");
    return rc;
}

} // namespace

// --- The platform's half of the runtime (guest/runtime.h) ---------------------------

namespace rt {

void console_write(const char* s, size_t n)
{
    std::lock_guard<std::mutex> l(state.console);
    std::fwrite(s, 1, n, stdout);
    std::fflush(stdout);
}

Cpu& this_cpu() { return *tls_cpu; }
unsigned nr_vcpus() { return state.domain->nr_vcpus; }

bool platform_counters(unsigned vcpu, PlatformCounters& out)
{
    if (vcpu >= state.domain->nr_vcpus) return false;
    const sim::CpuCounters& c = state.machine->counters(state.domain->vcpus[vcpu].cpu);
    out = PlatformCounters{.faults = c.faults,
                           .tlb_misses = c.tlb_misses,
                           .tlb_misses_counted = true,
                           .flush_all = c.flush_all,
                           .flush_page = c.flush_page,
                           .shootdowns_sent = c.shootdowns_sent,
                           .shootdowns_served = c.shootdowns_served,
                           .cleans = c.cleans};
    return true;
}

bool foreign_domain(ForeignDomain& out)
{
    if (!state.foreign) return false;
    out = ForeignDomain{state.foreign->id, Mfn{state.foreign_layout.first.v}, state.foreign_layout.nr_frames};
    return true;
}

bool pvmmu_op_available() { return true; }

Mfn hypervisor_frame() { return Mfn{state.machine->arena().first_xen_frame().v}; }
Mfn io_frame() { return Mfn{state.machine->arena().first_io_frame().v}; }

bool deny(uint32_t bits) { return state.domain->policy.deny_abi(bits); }

bool hypervisor_install_retries(uint64_t& out)
{
    out = state.machine->hv().install_retries();
    return true;
}

const char* platform_arg(unsigned i) { return i < state.args.size() ? state.args[i] : nullptr; }

uint64_t now_ns()
{
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
}

// The sim grants it: the entry is changed in machine memory directly, as a
// guest store through a writable mapping of its page table would (the walker
// sees it at once; the sim benchmarks a coherent walker).
bool native_pte_cmpxchg(Maddr entry, uint64_t& expected, uint64_t desired, bool& swapped)
{
    const MachineMemory& mem = state.machine->hv().mem();
    if ((entry.v & 7) || !mem.valid(pvmmu::Maddr{entry.v}.mfn())) return false;
    uint64_t* slot = mem.table(pvmmu::Maddr{entry.v}.mfn()) + (entry.v & (kPageSize - 1)) / sizeof(uint64_t);
    swapped = std::atomic_ref<uint64_t>(*slot).compare_exchange_strong(expected, desired, std::memory_order_acq_rel);
    return true;
}

} // namespace rt

int sim_main(int argc, char** argv)
{
    TestConfig cfg = test_config;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) return usage(stdout, 0);
        if (!std::strcmp(argv[i], "--info")) {
            std::printf("title: %s\ncpus: %u\nframes: %llu\ndeny: %#x\nsecond_domain: %d\n"
                        "second_domain_frames: %llu\ntlb_caches_invalid: %d\ncoherent_walker: %d\n",
                        test_title, cfg.cpus, (unsigned long long)cfg.frames, cfg.deny, cfg.second_domain,
                        (unsigned long long)(cfg.second_domain ? kForeignFrames : 0), cfg.tlb_caches_invalid,
                        cfg.coherent_walker);
            return 0;
        }
        if (!std::strcmp(argv[i], "--cpus") && i + 1 < argc) {
            cfg.cpus = unsigned(std::strtoul(argv[++i], nullptr, 0));
            continue;
        }
        if (!std::strcmp(argv[i], "--tlb-caches-invalid")) {
            cfg.tlb_caches_invalid = true;
            continue;
        }
        if (!std::strcmp(argv[i], "--interleave")) {
            state.interleave = true;
            continue;
        }
        if (argv[i][0] != '-' && std::strchr(argv[i], '=')) {
            state.args.push_back(argv[i]);
            continue;
        }
        return usage(stderr, 2);
    }
    if (cfg.cpus == 0 || cfg.cpus + cfg.second_domain > kMaxCpus) {
        std::printf("--cpus must be 1..%u\nTest result: ERROR\n", kMaxCpus - cfg.second_domain);
        return 4;
    }

    sim::Machine m(sim::MachineConfig{
        .cpus = cfg.cpus + (cfg.second_domain ? 1u : 0u),
        .frames = sim::Arena::kXenFrames + sim::Arena::kIoFrames + cfg.frames +
                  (cfg.second_domain ? kForeignFrames : 0),
        .tlb_caches_invalid = cfg.tlb_caches_invalid,
        .coherent_walker = cfg.coherent_walker,
    });
    DomainLayout lay;
    int rc = 0;
    Domain* d = m.create_domain(1, cfg.frames, cfg.cpus, lay, &rc);
    if (!d) {
        std::printf("cannot build the domain: %d\nTest result: ERROR\n", rc);
        return 4;
    }
    if (!d->policy.deny_abi(cfg.deny)) {
        std::printf("deny bits %#x: not all known\nTest result: ERROR\n", cfg.deny);
        return 4;
    }
    state.machine = &m;
    state.domain = d;
    if (cfg.second_domain) {
        state.foreign = m.create_domain(2, kForeignFrames, 1, state.foreign_layout, &rc);
        if (!state.foreign) {
            std::printf("cannot build the second domain: %d\nTest result: ERROR\n", rc);
            return 4;
        }
    }

    const BootInfo bi{
        .physmap = Va{lay.physmap.v},
        .first_mfn = Mfn{lay.first.v},
        .nr_frames = lay.nr_frames,
        .nr_pt_frames = lay.nr_pt_frames,
        .nr_vcpus = cfg.cpus,
        .tlb_caches_invalid = cfg.tlb_caches_invalid,
        .coherent_walker = cfg.coherent_walker,
    };
    Outcome result = Outcome::Error;
    m.run(*d, [&](sim::GuestContext& g) {
        simplat::SimCpu plat(g, state.interleave);
        Cpu cpu(plat, plat, g.vcpu().id);
        tls_cpu = &cpu;
        g.set_fault_handler([&cpu](sim::GuestContext&, const sim::Fault& f) {
            return rt::fault(cpu, FaultInfo{Va{f.va.v}, access_of(f.access), f.present});
        });
        if (cpu.id == 0) result = rt::boot_main(cpu, bi);
        else rt::secondary_main(cpu);
        g.set_fault_handler(nullptr);
        tls_cpu = nullptr;
    });
    return exit_code(result);
}

} // namespace pvmmu::guest

int main(int argc, char** argv) { return pvmmu::guest::sim_main(argc, argv); }
