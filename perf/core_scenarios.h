// The scenarios of the core's per-PTE cost (docs/design.md §4 "Cost"): one full L1
// of data pages on the DirectMachine, changed by one hypercall and changed back by
// a second, so every round starts from the same state and counts the same
// instructions. A step is measured or only restores (the lowering after a
// measured raise must not be counted as part of the raise).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "sim/direct_machine.h"

namespace pvmmu::perf {

class CoreRig {
public:
    static constexpr unsigned kSteps = 2;

    // The scenario names in report order; make() accepts exactly these.
    static std::vector<std::string_view> names();
    static std::unique_ptr<CoreRig> make(std::string_view scenario);

    bool measured(unsigned step) const { return steps_[step].measured; }
    unsigned measured_ptes_per_round() const;

    // The hypercall of one step and nothing else: what the counts enclose.
    long call(unsigned step)
    {
        Step& s = steps_[step];
        if (!s.entries.empty())
            return m_.call(d_->vcpus[0], __HYPERVISOR_multicall, reinterpret_cast<uint64_t>(s.entries.data()),
                           s.entries.size());
        return m_.call(d_->vcpus[0], __HYPERVISOR_mmu_update, reinterpret_cast<uint64_t>(s.reqs.data()),
                       s.reqs.size(), reinterpret_cast<uint64_t>(&done_), DOMID_SELF);
    }
    // Whether that call did all its requests.
    bool completed(unsigned step, long rc) const
    {
        const Step& s = steps_[step];
        if (s.entries.empty()) return rc == 0 && done_ == s.reqs.size();
        for (const multicall_entry_t& e : s.entries)
            if (e.result != 0) return false;
        return rc == 0;
    }
    // Whether the L1 is as the domain builder left it (true after every round).
    bool at_start();

private:
    struct Step {
        std::vector<mmu_update_t> reqs;
        std::vector<multicall_entry_t> entries;   // one per request, or none
        bool measured = false;
    };

    CoreRig();

    sim::DirectMachine m_{8192};
    DomainLayout lay_;
    Domain* d_ = nullptr;
    Mfn l1_{0};
    std::vector<uint64_t> initial_;
    Step steps_[kSteps];
    uint32_t done_ = 0;
};

} // namespace pvmmu::perf
