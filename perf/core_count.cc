// pvmmu-core-count SCENARIO [ROUNDS]: runs one scenario of core_scenarios.h with
// callgrind collecting only inside the measured hypercalls, so that
//   valgrind --tool=callgrind --collect-atstart=no pvmmu-core-count SCENARIO
// reports the instructions of those hypercalls alone (docs/design.md §9: callgrind is
// deterministic; timers are not). The last line says how many PTEs they changed;
// perf/bench_core.py divides. Outside valgrind it only runs the rounds.
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <valgrind/callgrind.h>

#include "core_scenarios.h"

using pvmmu::perf::CoreRig;

namespace {

// One round, collecting only around measured steps; false if a call failed.
bool round(CoreRig& rig, bool collect)
{
    for (unsigned s = 0; s < CoreRig::kSteps; ++s) {
        const bool on = collect && rig.measured(s);
        for (unsigned k = 0; k < rig.calls(s); ++k) {
            if (on) CALLGRIND_TOGGLE_COLLECT;
            const long rc = rig.call(s, k);
            if (on) CALLGRIND_TOGGLE_COLLECT;
            if (!rig.completed(s, k, rc)) {
                std::fprintf(stderr, "step %u call %u failed: rc %ld\n", s, k, rc);
                return false;
            }
        }
    }
    return rig.at_start();
}

int usage()
{
    std::fprintf(stderr, "usage: pvmmu-core-count SCENARIO [ROUNDS]   (ROUNDS 1..100000, default 20)\n"
                         "       pvmmu-core-count --list\nscenarios:");
    for (std::string_view n : CoreRig::names()) std::fprintf(stderr, " %.*s", int(n.size()), n.data());
    std::fprintf(stderr, "\n");
    return 2;
}

} // namespace

int main(int argc, char** argv)
{
    if (argc == 2 && std::string_view(argv[1]) == "--list") {
        for (std::string_view n : CoreRig::names()) std::printf("%.*s\n", int(n.size()), n.data());
        return 0;
    }
    if (argc < 2 || argc > 3) return usage();
    const long rounds = argc == 3 ? std::strtol(argv[2], nullptr, 10) : 20;
    if (rounds < 1 || rounds > 100000) return usage();
    auto rig = CoreRig::make(argv[1]);
    if (!rig) return usage();

    // One warm-up round outside the count: first-touch effects are not the path.
    if (!round(*rig, false)) return 1;
    for (long r = 0; r < rounds; ++r)
        if (!round(*rig, true)) return 1;
    std::printf("scenario=%s rounds=%ld ptes=%lu\n", argv[1], rounds,
                static_cast<unsigned long>(rounds) * rig->measured_ptes_per_round());
    return 0;
}
