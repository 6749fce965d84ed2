// The state a refused request must leave as it found it (docs/design.md §3: "a failed
// request changes nothing"): every frame's owner, counts, type word and m2p
// entry, the memory of every guest-owned frame, and the vCPUs' base pointers.
// Flush records, the TLB clock and frames' flush stamps are not state (a refused
// request may flush, as Xen's may).
//
// The compare tolerates, unless strict:
//  - the type and validated bit of a frame whose type count is 0 (unused type
//    history: the next first reference retypes or revalidates it anyway);
//  - the US bit of entries of frames typed as page tables: a table validated and
//    devalidated inside a refused request keeps the US bit validation gave its
//    present entries (Xen's adjust_guest_l*e does the same);
// and, with concurrent hardware (ad_walker.h), the A/D bits of every word.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "core/hypervisor.h"

namespace pvmmu::fuzz {

struct StateSnapshot {
    struct Frame {
        DomId owner;
        uint32_t count;
        uint64_t type_info;
        uint64_t m2p;
    };
    struct Base {
        uint64_t table, user;
        bool has, has_user;
        bool operator==(const Base&) const = default;
    };

    // Memory is copied from frame `first` on (the frames below are the
    // hypervisor's and I/O frames, checked separately). With `atomic`, words are
    // read with atomic loads: another thread may be setting A/D bits.
    void take(Hypervisor& hv, uint64_t first, bool atomic);

    uint64_t first = 0;
    std::vector<Frame> frames;
    std::vector<uint64_t> words;
    std::vector<Base> bases;
};

struct CompareRules {
    bool ignore_ad = false;
    bool strict = false;
};

// Empty when `after` equals `before` under the rules; else the differences.
std::string differences(const StateSnapshot& before, const StateSnapshot& after, CompareRules rules);

} // namespace pvmmu::fuzz
