// gtest glue for core/invariants.h: run the checker over a DirectMachine with
// scratch it owns, and turn the report into an assertion whose message lists
// every kept violation, so a failing test says which frame broke which rule.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "core/invariants.h"
#include "sim/direct_machine.h"

namespace pvmmu::test {

class InvariantChecker {
public:
    explicit InvariantChecker(Hypervisor& hv) : hv_(hv), scratch_(hv.mem().nr_frames) {}

    const InvariantReport& run()
    {
        (void)check_invariants(hv_, TallySpan{scratch_.data(), scratch_.size()}, report_);
        return report_;
    }
    const InvariantReport& report() const { return report_; }

    // True if one of the kept violations names `reason` (a substring of it).
    bool found(const std::string& reason) const
    {
        for (unsigned i = 0; i < report_.kept(); ++i)
            if (std::string(report_[i].reason).find(reason) != std::string::npos) return true;
        return false;
    }

    std::string describe() const
    {
        std::ostringstream s;
        s << report_.total() << " violation(s)";
        for (unsigned i = 0; i < report_.kept(); ++i) {
            const Violation& v = report_[i];
            s << "\n  mfn " << v.frame.v;
            if (v.index != Violation::kNoIndex) s << " entry " << v.index;
            s << ": " << v.reason << " (expected 0x" << std::hex << v.expected << ", actual 0x" << v.actual
              << std::dec << ")";
        }
        return s.str();
    }

private:
    Hypervisor& hv_;
    std::vector<FrameTally> scratch_;
    InvariantReport report_;
};

// EXPECT_TRUE(invariants_hold(m)): every invariant of docs/design.md §4 holds now.
inline ::testing::AssertionResult invariants_hold(sim::DirectMachine& m)
{
    InvariantChecker c(m.hv());
    if (c.run().ok()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << c.describe();
}

// EXPECT_TRUE(invariant_broken(m, "reason")): the checker fails, naming `reason`.
inline ::testing::AssertionResult invariant_broken(sim::DirectMachine& m, const std::string& reason)
{
    InvariantChecker c(m.hv());
    if (c.run().ok()) return ::testing::AssertionFailure() << "the checker found nothing (wanted: " << reason << ")";
    if (c.found(reason)) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "wanted '" << reason << "', got " << c.describe();
}

} // namespace pvmmu::test
