// `./pvmmu bench mprotect` until the full benchmark lands (issue 4): on the
// simulated machine, one domain with 4 vCPUs; vCPU 0 mprotects a 2048-page region
// RW<->RO with batched hypercalls while the other vCPUs keep writing to it. A
// table shows, per update method, the PTEs updated, the hypercalls issued and the
// A/D bits lost: every page a writer wrote must end Accessed and Dirty (nothing
// here clears those bits on purpose), so a written page without them lost a bit.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <pvmmu/abi.h>

#include "core/pagetable.h"
#include "sim/guest_context.h"

using namespace pvmmu;

namespace {

enum class Method { FlagRange, AtomicArray, UnsafeNormal };

const char* name(Method m)
{
    switch (m) {
    case Method::FlagRange: return "flag-range (cmd 4)";
    case Method::AtomicArray: return "atomic-array (cmd 2)";
    default: return "unsafe (cmd 0 RMW)";
    }
}

struct Options {
    unsigned pages = 2048, vcpus = 4, cycles = 1000;
};

struct Row {
    uint64_t pte_updates = 0, hypercalls = 0, flushes = 0, faults = 0;
    uint64_t written = 0, lost = 0;
    double seconds = 0;
};

constexpr uint64_t kFirst = 1024;   // the region: gpfns kFirst .. kFirst + pages

Row run(Method method, const Options& o)
{
    sim::Machine m(sim::MachineConfig{.cpus = o.vcpus, .frames = 8192});
    DomainLayout lay;
    Domain* d = m.create_domain(1, 4096, o.vcpus, lay);
    if (!d) {
        std::fprintf(stderr, "pvmmu-demo: cannot build the domain\n");
        std::exit(1);
    }
    const uint64_t reqbuf = kFirst + o.pages;   // request arrays, 8 pages
    std::atomic<bool> stop{false};
    std::atomic<unsigned> writing{0};
    std::vector<std::vector<uint8_t>> written(o.vcpus, std::vector<uint8_t>(o.pages));
    Row row;
    const auto t0 = std::chrono::steady_clock::now();

    m.run(*d, [&](sim::GuestContext& g) {
        auto pte_va = [&](uint64_t gpfn) {
            return Vaddr{lay.va(lay.l1_gpfn(gpfn)).v + (gpfn % kEntriesPerTable) * sizeof(uint64_t)};
        };
        auto call = [&](uint64_t op, const void* args, size_t bytes, uint64_t count) {
            if (!g.write_bytes(lay.va(reqbuf), args, bytes)) std::abort();
            ++row.hypercalls;
            return g.hypercall(op, lay.va(reqbuf).v, count, 0, DOMID_SELF);
        };
        if (g.vcpu().id != 0) {
            // A write fault means RO now, or a stale RO entry after the raise:
            // wait for RW, then drop the local entry (SPEC §6 spurious write fault).
            g.set_fault_handler([&](sim::GuestContext& gc, const sim::Fault& f) {
                uint64_t pte = 0;
                const uint64_t gpfn = (f.va.v - lay.physmap.v) >> kPageShift;
                while (!stop.load() && gc.load(pte_va(gpfn), pte) && !(pte & pte_bit::RW)) {
                    gc.poll();
                    std::this_thread::yield();
                }
                mmuext_op_t op{};
                op.cmd = MMUEXT_INVLPG_LOCAL;
                op.arg1.linear_addr = f.va.v;
                if (!gc.write_bytes(lay.va(reqbuf + 8 + gc.vcpu().id), &op, sizeof(op))) return false;
                gc.hypercall(__HYPERVISOR_mmuext_op, lay.va(reqbuf + 8 + gc.vcpu().id).v, 1, 0, DOMID_SELF);
                return !stop.load();
            });
            auto& mine = written[g.vcpu().id];
            writing.fetch_add(1);
            for (uint64_t k = 0; !stop.load(std::memory_order_relaxed); ++k) {
                const uint64_t i = (k * 7 + g.vcpu().id * 131) % o.pages;
                if (g.store(lay.va(kFirst + i), k)) mine[i] = 1;
                if (k % 32 == 31) std::this_thread::yield();
            }
            return;
        }
        while (writing.load() < o.vcpus - 1) {   // start once every writer writes
            g.poll();
            std::this_thread::yield();
        }
        std::vector<mmu_update_t> reqs(kEntriesPerTable);
        for (unsigned c = 0; c < 2 * o.cycles; ++c) {
            const bool to_ro = (c & 1) == 0;
            for (uint64_t base = 0; base < o.pages; base += kEntriesPerTable) {
                const uint64_t n = std::min<uint64_t>(kEntriesPerTable, o.pages - base);
                if (method == Method::FlagRange) {
                    const mmu_update_t r{lay.pte_maddr(kFirst + base).v | MMU_FLAG_RANGE_UPDATE,
                                         abi::encode_flag_range(pte_bit::RW, to_ro ? 0 : pte_bit::RW, uint32_t(n))};
                    if (call(__HYPERVISOR_mmu_update, &r, sizeof(r), 1)) std::abort();
                } else {
                    // Read the entries (read-only to the guest), then write them back
                    // changed: cmd 2 folds in A/D set meanwhile, cmd 0 does not.
                    const uint64_t cmd = method == Method::AtomicArray ? MMU_ATOMIC_PT_UPDATE : MMU_NORMAL_PT_UPDATE;
                    for (uint64_t i = 0; i < n; ++i) {
                        uint64_t pte = 0;
                        if (!g.load(pte_va(kFirst + base + i), pte)) std::abort();
                        pte = to_ro ? pte & ~pte_bit::RW : pte | pte_bit::RW;
                        reqs[i] = mmu_update_t{lay.pte_maddr(kFirst + base + i).v | cmd, pte};
                    }
                    if (call(__HYPERVISOR_mmu_update, reqs.data(), n * sizeof(mmu_update_t), n)) std::abort();
                }
                row.pte_updates += n;
            }
            if (to_ro) {   // a permission reduction is flushed once per mprotect
                mmuext_op_t op{};
                op.cmd = MMUEXT_TLB_FLUSH_ALL;
                if (call(__HYPERVISOR_mmuext_op, &op, sizeof(op), 1)) std::abort();
                ++row.flushes;
            }
        }
        stop.store(true);
    });
    row.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

    // Every page some writer wrote must be Accessed and Dirty now.
    for (unsigned i = 0; i < o.pages; ++i) {
        bool w = false;
        for (auto& v : written) w |= v[i] != 0;
        if (!w) continue;
        ++row.written;
        const uint64_t pte = m.hv().mem().table(lay.mfn(lay.l1_gpfn(kFirst + i)))[(kFirst + i) % kEntriesPerTable];
        row.lost += !(pte & pte_bit::A) + !(pte & pte_bit::D);
    }
    row.faults = m.total_counters().faults;
    return row;
}

void usage(FILE* f)
{
    std::fprintf(f,
                 "usage: pvmmu bench mprotect [--pages N] [--cycles N] [--vcpus N]\n"
                 "Demo on the simulated machine: vCPU 0 mprotects a region RW<->RO with\n"
                 "batched hypercalls while the other vCPUs write to it; for each update\n"
                 "method, prints PTEs updated, hypercalls, flushes and A/D bits lost.\n"
                 "  --pages N    region size in pages (default 2048, at most 2048)\n"
                 "  --cycles N   RW->RO->RW cycles (default 1000)\n"
                 "  --vcpus N    vCPUs, one mprotecting, the rest writing (default 4, 2..8)\n");
}

} // namespace

int main(int argc, char** argv)
{
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto num = [&](unsigned lo, unsigned hi) {
            if (i + 1 >= argc) { usage(stderr); std::exit(2); }
            const long v = std::strtol(argv[++i], nullptr, 10);
            if (v < long(lo) || v > long(hi)) {
                std::fprintf(stderr, "pvmmu bench mprotect: %s must be in %u..%u\n", a.c_str(), lo, hi);
                std::exit(2);
            }
            return unsigned(v);
        };
        if (a == "--help" || a == "-h") { usage(stdout); return 0; }
        else if (a == "--pages") o.pages = num(1, 2048);
        else if (a == "--cycles") o.cycles = num(1, 100000);
        else if (a == "--vcpus") o.vcpus = num(2, 8);
        else { std::fprintf(stderr, "pvmmu bench mprotect: unknown option %s\n", a.c_str()); usage(stderr); return 2; }
    }
    std::printf("mprotect demo on the simulated machine: %u vCPUs (1 mprotecting, %u writing), "
                "%u pages, %u RW->RO->RW cycles\n\n",
                o.vcpus, o.vcpus - 1, o.pages, o.cycles);
    std::printf("%-22s %12s %11s %14s %9s %9s %12s %8s\n", "method", "PTE updates", "hypercalls",
                "hc/512 PTEs", "flushes", "faults", "A/D lost", "seconds");
    bool ok = true;
    for (Method meth : {Method::FlagRange, Method::AtomicArray, Method::UnsafeNormal}) {
        if (isatty(2)) std::fprintf(stderr, "  running %s...\r", name(meth));
        const Row r = run(meth, o);
        const double per512 = double(r.hypercalls - r.flushes) * 512.0 / double(r.pte_updates);
        std::printf("%-22s %12llu %11llu %14.2f %9llu %9llu %5llu of %-4llu %8.2f\n", name(meth),
                    (unsigned long long)r.pte_updates, (unsigned long long)r.hypercalls, per512,
                    (unsigned long long)r.flushes, (unsigned long long)r.faults, (unsigned long long)r.lost,
                    (unsigned long long)(2 * r.written), r.seconds);
        if (meth != Method::UnsafeNormal && r.lost) ok = false;
    }
    std::printf("\nA/D lost counts Accessed and Dirty bits missing on pages the writers wrote.\n"
                "cmd 2 and cmd 4 must lose none; cmd 0 read-modify-write may.\n");
    return ok ? 0 : 1;
}
