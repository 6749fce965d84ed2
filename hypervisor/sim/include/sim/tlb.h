// A per-CPU software TLB (docs/design.md §5): caches translations with their permissions,
// so stale entries and spurious faults happen as on hardware. Direct-mapped by
// virtual page number. With the "TLB may cache invalid entries" property a failed
// walk leaves a negative entry that keeps faulting until it is flushed.
#pragma once

#include <vector>

#include "core/types.h"

namespace pvmmu::sim {

struct TlbEntry {
    uint64_t vpn = 0;
    uint64_t mfn = 0;
    bool valid = false;
    bool negative = false;   // a cached "not present"
    bool rw = false, us = false, nx = false;
    bool dirty = false;      // the PTE's D was set when this was cached
};

class Tlb {
public:
    explicit Tlb(unsigned entries) : e_(entries) {}

    TlbEntry* lookup(uint64_t vpn)
    {
        TlbEntry& t = slot(vpn);
        return t.valid && t.vpn == vpn ? &t : nullptr;
    }
    void insert(const TlbEntry& t) { slot(t.vpn) = t; }
    void flush_all()
    {
        for (auto& t : e_) t.valid = false;
    }
    void flush_page(uint64_t vpn)
    {
        if (TlbEntry* t = lookup(vpn)) t->valid = false;
    }

private:
    TlbEntry& slot(uint64_t vpn) { return e_[vpn & (e_.size() - 1)]; }
    std::vector<TlbEntry> e_;
};

} // namespace pvmmu::sim
