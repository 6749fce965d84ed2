// The scenarios of the core's per-PTE cost (docs/design.md §4 "Cost"): one full L1
// of data pages on the DirectMachine, changed by one hypercall and changed back by
// a second, so every round starts from the same state and counts the same
// instructions. A step is measured or only restores (the lowering after a
// measured raise must not be counted as part of the raise).
//
// The fork scenarios (docs/results.md §13 "Where pvmmu's fork goes") price what
// Linux's fork asks of the core per page, one call at a time: a step there is
// 512 calls (one-request mmu_updates, two-request batches, write-protects by
// emulate_l1_write) or one pin or unpin of a 512-entry L1, on tables pinned as
// Linux pins a process's: a parent L1 mapping 512 data frames writable and a
// child L1 mapping them read-only, every data frame also mapped writable in
// the physmap, as Linux's direct map maps it.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "core/pt_write.h"
#include "sim/direct_machine.h"

namespace pvmmu::perf {

class CoreRig {
public:
    static constexpr unsigned kSteps = 2;

    // The scenario names in report order; make() accepts exactly these.
    static std::vector<std::string_view> names();
    static std::unique_ptr<CoreRig> make(std::string_view scenario);

    bool measured(unsigned step) const { return steps_[step].measured; }
    // What one round's measured steps changed: PTEs, or requests, calls or
    // table entries where the scenario's row says so.
    unsigned measured_ptes_per_round() const;
    unsigned calls(unsigned step) const { return unsigned(steps_[step].calls.size()); }

    // Call k of one step and nothing else: what the counts enclose.
    long call(unsigned step, unsigned k)
    {
        const Call& c = steps_[step].calls[k];
        if (c.ptwr) {
            uint64_t old;
            return emulate_l1_write(m_.hv(), d_->id, c.l1, c.index, c.write, old);
        }
        return m_.call(d_->vcpus[0], c.op, c.arg[0], c.arg[1], reinterpret_cast<uint64_t>(&done_), DOMID_SELF);
    }
    // Whether that call did all it was asked.
    bool completed(unsigned step, unsigned k, long rc) const
    {
        const Step& s = steps_[step];
        const Call& c = s.calls[k];
        if (c.ptwr) return rc == 0;
        if (c.op != __HYPERVISOR_multicall) return rc == 0 && done_ == c.arg[1];
        for (const multicall_entry_t& e : s.entries)
            if (e.result != 0) return false;
        return rc == 0;
    }
    // Whether the tables are as the set-up left them (true after every round).
    bool at_start();

private:
    struct Call {
        uint64_t op = 0;
        uint64_t arg[2] = {};      // the request array and its count
        bool ptwr = false;         // emulate_l1_write(l1, index, write) instead
        Mfn l1{0};
        unsigned index = 0;
        PtWrite write;
    };
    struct Step {
        std::vector<mmu_update_t> reqs;
        std::vector<mmuext_op_t> ops;
        std::vector<multicall_entry_t> entries;   // one per request, or none
        std::vector<Call> calls;
        bool measured = false;
        unsigned units = kEntriesPerTable;        // counted per round when measured
    };

    CoreRig();
    bool fork_setup();
    // Each request of `st` a call of its own (`per` requests per call).
    static void split(Step& st, unsigned per);
    static void whole(Step& st);

    sim::DirectMachine m_{8192};
    DomainLayout lay_;
    Domain* d_ = nullptr;
    Mfn l1_{0};
    std::vector<uint64_t> initial_;
    // The fork scenarios' pinned L1s: the parent's (writable entries), the
    // child's (read-only entries) and an empty one; what at_start compares.
    Mfn parent_{0}, child_{0}, empty_{0};
    std::vector<uint64_t> tables_at_start_;
    Step steps_[kSteps];
    uint32_t done_ = 0;
};

} // namespace pvmmu::perf
