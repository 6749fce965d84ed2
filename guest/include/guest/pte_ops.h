// Operations on one page-table entry (docs/design.md §6), all through hypercalls: page
// tables are read-only to the guest, which reads them through the physmap.
//
// Every software writer of an entry holds its table's split lock (PteLock, taken
// by the caller as Linux callers hold the PTE lock); hardware changes only A and
// D. On top of that:
//   - the atomic operations use MMU_ATOMIC_PT_UPDATE (cmd 2), which installs
//     val | (A/D present at the install) when val maps the same frame: no
//     window in which another vCPU sees an empty entry (the seeds' Lameter
//     patch) and no A/D bit lost; a change of frame clears first (ptep_xchg);
//   - without cmd 2 (MmuLevel::Normal) they fall back to Lameter's generic
//     form, get_and_clear followed by set, both cmd 0 (see ptep_get_and_clear).
// Each write is followed by a counted clean when the walker is not coherent.
#pragma once

#include "guest/guest.h"

namespace pvmmu::guest {

// Holds the split lock of r's table for the lifetime of the object.
class PteLock {
public:
    PteLock(Cpu& c, PteRef r) : lock_(c.guest->pte_lock(r.table)), ref_(r), owned_(true) { lock_.lock(c); }
    // For code the caller already runs under the table's lock (an mprotect range
    // hook, MmuConfig::change_pte_range): names the entry, neither locks nor unlocks.
    struct Held {};
    PteLock(Cpu& c, PteRef r, Held) : lock_(c.guest->pte_lock(r.table)), ref_(r), owned_(false) {}
    ~PteLock()
    {
        if (owned_) lock_.unlock();
    }
    PteLock(const PteLock&) = delete;
    PteLock& operator=(const PteLock&) = delete;
    PteRef ref() const { return ref_; }

private:
    SpinLock& lock_;
    PteRef ref_;
    bool owned_;
};

// The entry's value, read through the physmap (no lock needed to read).
[[nodiscard]] bool pte_read(Cpu& c, PteRef r, uint64_t& out);

// Makes a PTE write visible to a non-coherent walker (counted); nothing on a
// coherent one.
void clean_pte(Cpu& c, PteRef r);

// A plain write of the entry (cmd 0, Xen's normal update: it is native set_pte,
// which overwrites A/D — meant for entries that map nothing yet).
[[nodiscard]] int set_pte(Cpu& c, PteLock& l, uint64_t val);

// Clears the entry and returns what it held. With cmd 2 the A/D bits are exact:
// the clear hands them back in the cleared entry, which is read back and then
// zeroed by a cmd-0 write (cmd 2 if cmd 0 is denied; over a non-present entry
// either stores 0 exactly on pvmmu, only cmd 0 on Xen; hardware never touches
// a non-present entry, so nothing can be lost in between). With cmd 0 only, the hypervisor cannot
// report what it replaced: A/D set between the guest's read and the clear are
// unknown, so `old` assumes the worst — accessed if present, dirty if writable —
// and a dirty page is never reported clean.
[[nodiscard]] int ptep_get_and_clear(Cpu& c, PteLock& l, uint64_t& old);

// Installs nv and returns the previous value, whose A/D bits are never lost:
//   - nv maps the same frame as the entry (or the entry maps nothing): one cmd-2
//     install, never an empty entry; the page's A/D stay in the new entry and
//     `old` reports them (a superset: bits nv carries itself, and bits hardware
//     sets on the page just after the install, are reported too);
//   - nv maps another frame, or nothing: cmd 2 carries no A/D into another
//     frame's mapping (abi.md §4.3), so the entry is cleared with cmd 2 first —
//     which hands the old page's A/D back exactly — and nv is written into the
//     empty entry with cmd 0, which installs it exactly (Xen's cmd 2 would OR
//     the handed-back A/D into nv), or with cmd 2 if cmd 0 is refused (pvmmu's
//     cmd 2 installs nv exactly over a non-present entry). `old` is exact. Another vCPU may find the entry empty in between and fault; its
//     handler waits for the lock and finds nv.
// Fallback: get_and_clear + set, `old` assuming the worst.
// On an error nothing is lost, but what is left depends on when it came:
//   - the first write refused, or the entry unreadable before it: the entry is
//     unchanged and `old` is not written (-EFAULT reading it back after the
//     clear, at the address just read, would leave it cleared);
//   - nv refused after the clear (a frame the domain may not map, say): `old`
//     is set as on success, and the old mapping is put back as `old` (with its
//     A/D bits; on the fallback, with A and D as assumed). Only if that is
//     refused too is the entry left empty (0; never the bare A/D bits, which
//     would read as a swap entry), and then `old` is the only record of them.
// The error returned is nv's.
[[nodiscard]] int ptep_xchg(Cpu& c, PteLock& l, uint64_t nv, uint64_t& old);

// If the entry's bits other than A/D equal those of `expected`, installs nv
// (cmd 2: with the A/D present at the install) and sets `swapped`; `seen`
// receives the value compared. Atomic against every other writer of the entry
// because they all hold the lock, and against hardware because hardware only
// sets A/D, which the compare ignores and the install keeps. On an error from
// the install, `swapped` stays false and `seen` receives ptep_xchg's `old`:
// the value compared with the A/D bits the failed exchange handed back, which
// is what the entry holds again (see ptep_xchg), so a D set meanwhile is
// reported.
[[nodiscard]] int ptep_cmpxchg(Cpu& c, PteLock& l, uint64_t expected, uint64_t nv, uint64_t& seen,
                               bool& swapped);

// A protection change in two steps (Linux's ptep_modify_prot_start/commit, as
// Xen PV implements them): start reads the entry — hardware may still set A/D —
// and commit installs with cmd 2, so those bits survive. Fallback: start is
// get_and_clear, commit is set.
[[nodiscard]] int ptep_modify_prot_start(Cpu& c, PteLock& l, uint64_t& old);
[[nodiscard]] int ptep_modify_prot_commit(Cpu& c, PteLock& l, uint64_t old, uint64_t nv);

} // namespace pvmmu::guest
