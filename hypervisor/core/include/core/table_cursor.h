// The page-table page a batch is writing. Lookup, type reference and lock are
// taken once for a run of requests on the same page (docs/design.md §3: once per request
// for FLAG_RANGE, and once per run for cmd-2 arrays) and dropped when the batch
// moves to another page, ends or is preempted.
#pragma once

#include "core/refs.h"

namespace pvmmu {

class TableCursor {
public:
    TableCursor(Hypervisor& hv, DomId self) : hv_(hv), self_(self) {}
    TableCursor(const TableCursor&) = delete;
    TableCursor& operator=(const TableCursor&) = delete;
    ~TableCursor() { release(); }

    // The level (1..4) of the validated table `m` of this domain, now referenced
    // and locked; 0 if `m` is no such table.
    unsigned acquire(Mfn m)
    {
        if (level_ && m == mfn_) return level_;
        release();
        level_ = get_existing_table(hv_, m, self_);   // 0 for an invalid m too
        if (level_) {
            mfn_ = m;
            hv_.frame(m).lock.lock(hv_.platform());
        }
        return level_;
    }

    void release()
    {
        if (!level_) return;
        hv_.platform().tables_written(mfn_);
        hv_.frame(mfn_).lock.unlock();
        put_page_type(hv_, mfn_);
        level_ = 0;
    }

    uint64_t* table() const { return hv_.mem().table(mfn_); }
    Mfn mfn() const { return mfn_; }
    unsigned level() const { return level_; }   // 0: nothing held

private:
    Hypervisor& hv_;
    DomId self_;
    Mfn mfn_{0};
    unsigned level_ = 0;
};

} // namespace pvmmu
