// The whole-machine invariants of docs/design.md §4, checked from scratch: every reference
// count is recomputed from what the validated tables, pins and base pointers
// actually hold, and every entry of every validated table is re-checked against
// the rules the hypercalls enforce. Tests and the fuzzer run it after hypercalls;
// it is the oracle that tells "the core kept its promises" from "it did not".
//
// It runs on a quiescent machine (no hypercall in flight; hardware may still set
// A/D bits, which no invariant depends on). It does not allocate: the caller
// gives one FrameTally per machine frame, so it builds freestanding too.
#pragma once

#include "core/hypervisor.h"

namespace pvmmu {

// References to one frame, recounted: general and type references.
struct FrameTally {
    uint32_t general;
    uint32_t type;
};

// Caller-provided scratch: at least hv.mem().nr_frames tallies.
struct TallySpan {
    FrameTally* data;
    uint64_t size;
};

struct Violation {
    static constexpr uint32_t kNoIndex = ~0u;
    Mfn frame;            // the frame the rule is about
    uint32_t index;       // entry index in that frame (a table), or kNoIndex
    const char* reason;   // a static string naming the broken rule
    uint64_t expected;    // what the rule wants (counts), or the offending value
    uint64_t actual;      // what the machine holds
};

class InvariantReport {
public:
    static constexpr unsigned kMaxKept = 8;

    bool ok() const { return total_ == 0; }
    uint64_t total() const { return total_; }          // violations found
    unsigned kept() const { return kept_; }            // the first kMaxKept of them
    const Violation& operator[](unsigned i) const { return v_[i]; }

    // What one check covered (for its cost per frame and per entry).
    uint64_t frames = 0;
    uint64_t tables = 0;     // validated tables walked
    uint64_t entries = 0;    // present entries checked

    void add(Mfn m, uint32_t index, const char* reason, uint64_t expected, uint64_t actual)
    {
        if (kept_ < kMaxKept) v_[kept_++] = Violation{m, index, reason, expected, actual};
        ++total_;
    }
    void clear() { *this = InvariantReport{}; }

private:
    Violation v_[kMaxKept] = {};
    unsigned kept_ = 0;
    uint64_t total_ = 0;
};

// Checks every invariant; returns report.ok(). The report is cleared first.
bool check_invariants(Hypervisor& hv, TallySpan scratch, InvariantReport& report);

} // namespace pvmmu
