// pvmmu-bench-core-gbench: wall-clock time per PTE of each scenario of
// core_scenarios.h, with Google Benchmark. Only measured steps are timed (manual
// time), so a raise is not charged for the lowering that restores the state.
// Reports items_per_second and ns_per_pte; instruction counts come from
// pvmmu-core-count, which, unlike time, is the same on every run.
#include <chrono>
#include <string>

#include <benchmark/benchmark.h>

#include "core_scenarios.h"

using pvmmu::perf::CoreRig;

namespace {

void run_scenario(benchmark::State& state, CoreRig* rig)
{
    using Clock = std::chrono::steady_clock;
    double total_ns = 0;
    for (auto _ : state) {
        double ns = 0;
        for (unsigned s = 0; s < CoreRig::kSteps; ++s) {
            for (unsigned k = 0; k < rig->calls(s); ++k) {
                const auto t0 = Clock::now();
                const long rc = rig->call(s, k);
                const auto t1 = Clock::now();
                if (!rig->completed(s, k, rc)) {
                    state.SkipWithError("hypercall failed");
                    return;
                }
                if (rig->measured(s)) ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
            }
        }
        state.SetIterationTime(ns * 1e-9);
        total_ns += ns;
    }
    const double ptes = double(state.iterations()) * rig->measured_ptes_per_round();
    state.SetItemsProcessed(int64_t(ptes));
    state.counters["ns_per_pte"] = benchmark::Counter(ptes > 0 ? total_ns / ptes : 0);
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::unique_ptr<CoreRig>> rigs;
    for (std::string_view name : CoreRig::names()) {
        rigs.push_back(CoreRig::make(name));
        if (!rigs.back()) return 1;
        benchmark::RegisterBenchmark(std::string(name).c_str(), run_scenario, rigs.back().get())
            ->UseManualTime();
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
