// Operations on one page-table entry; see guest/pte_ops.h for the guarantees.
#include "guest/pte_ops.h"

#include "guest/hypercalls.h"
#include "guest/pte.h"

namespace pvmmu::guest {

namespace {

// One update of the locked entry with `cmd`; cleaned afterwards whatever the
// outcome (a failed request changed nothing, so the clean is merely spare).
int write(Cpu& c, PteLock& l, unsigned cmd, uint64_t val)
{
    const long rc = mmu_update_one(c, pte_maddr(*c.guest, l.ref()), cmd, val);
    clean_pte(c, l.ref());
    return int(rc);
}

bool atomic_ok(Cpu& c) { return c.guest->level() != MmuLevel::Normal; }

// A cmd-2 write; when cmd 2 is refused the level drops and `fell_back` says
// that the write did not happen for that reason.
// `fell_back` is set when the write did not happen for that reason.
int write_atomic(Cpu& c, PteLock& l, uint64_t val, bool& fell_back)
{
    fell_back = false;
    const int rc = write(c, l, MMU_ATOMIC_PT_UPDATE, val);
    if ((rc == -XEN_ENOSYS || rc == -XEN_EPERM) && c.guest->refused(c, MMU_ATOMIC_PT_UPDATE)) fell_back = true;
    return fell_back ? 0 : rc;
}

// Worst case for what cmd 0 replaced without telling (see ptep_get_and_clear).
uint64_t assume_worst(uint64_t seen)
{
    if (!pte_present(seen)) return seen;
    return seen | pte::A | ((seen & pte::RW) ? pte::D : 0);
}

// Stores val into the locked entry, which maps nothing now (it may hold the
// A/D bits a cmd-2 clear handed back). cmd 0 stores val exactly over it on
// every hypervisor; cmd 2 does on pvmmu (abi.md §4.3) but not on Xen, whose
// cmd 2 ORs the entry's bits 5 and 6 into val even there (a new frame's entry
// would inherit the old one's D), so cmd 2 only for a domain that may not use
// cmd 0. The library's level is not dropped here: an -EPERM more likely names
// val (a frame this domain may not map) than the command.
int install_into_empty(Cpu& c, PteLock& l, uint64_t val)
{
    const int rc = write(c, l, MMU_NORMAL_PT_UPDATE, val);
    if (rc != -XEN_ENOSYS && rc != -XEN_EPERM) return rc;
    return write(c, l, MMU_ATOMIC_PT_UPDATE, val) == 0 ? 0 : rc;
}

int get_and_clear_normal(Cpu& c, PteLock& l, uint64_t& old)
{
    uint64_t seen;
    if (!pte_read(c, l.ref(), seen)) return -XEN_EFAULT;
    if (int rc = write(c, l, MMU_NORMAL_PT_UPDATE, 0)) return rc;
    old = assume_worst(seen);
    return 0;
}

} // namespace

bool pte_read(Cpu& c, PteRef r, uint64_t& out) { return c.mem.load(pte_va(*c.guest, r), out); }

void clean_pte(Cpu& c, PteRef r)
{
    if (c.guest->boot().coherent_walker) return;
    c.mem.clean(pte_va(*c.guest, r));
    ++c.stats.cleans;
}

int set_pte(Cpu& c, PteLock& l, uint64_t val) { return write(c, l, MMU_NORMAL_PT_UPDATE, val); }

int ptep_get_and_clear(Cpu& c, PteLock& l, uint64_t& old)
{
    if (!atomic_ok(c)) return get_and_clear_normal(c, l, old);
    uint64_t seen, after;
    if (!pte_read(c, l.ref(), seen)) return -XEN_EFAULT;
    bool fell_back;
    if (int rc = write_atomic(c, l, 0, fell_back)) return rc;
    if (fell_back) return get_and_clear_normal(c, l, old);
    if (!pte_read(c, l.ref(), after)) return -XEN_EFAULT;
    old = seen | (after & pte::AD);
    // The cleared entry holds the handed-back A/D bits: zero it for good.
    return after ? install_into_empty(c, l, 0) : 0;
}

int ptep_xchg(Cpu& c, PteLock& l, uint64_t nv, uint64_t& old)
{
    if (atomic_ok(c)) {
        uint64_t seen, after;
        if (!pte_read(c, l.ref(), seen)) return -XEN_EFAULT;
        // The same page stays mapped (or none was): one cmd-2 install, which
        // keeps the page's A/D in the new entry (abi.md §4.3).
        const bool one_step = !pte_present(seen) || (pte_present(nv) && pte_mfn(nv).v == pte_mfn(seen).v);
        bool fell_back;
        if (int rc = write_atomic(c, l, one_step ? nv : 0, fell_back)) return rc;
        if (!fell_back) {
            if (!pte_read(c, l.ref(), after)) return -XEN_EFAULT;
            if (one_step) {
                old = pte_present(seen) ? seen | (after & pte::AD) : seen;
                return 0;
            }
            // Another frame, or none: cmd 2 would not carry the old page's A/D
            // into nv, so the entry is cleared first, which hands them back
            // exactly; nv goes into the empty entry, which hardware leaves alone.
            old = (seen & ~pte::AD) | (after & pte::AD);
            if (after == nv) return 0;
            const int rc = install_into_empty(c, l, nv);
            // Refused (a frame this domain may not map, say): the old mapping
            // goes back with the A/D it had, or, if even that is refused, the
            // entry is left empty rather than holding bare A/D bits, which
            // would read as a swap entry.
            if (rc && install_into_empty(c, l, old) && after) (void)install_into_empty(c, l, 0);
            return rc;
        }
    }
    // Lameter's generic fallback: the entry is empty between the two writes.
    if (int rc = get_and_clear_normal(c, l, old)) return rc;
    const int rc = set_pte(c, l, nv);
    // Refused: what the entry held goes back, A and D as assumed (the worst).
    if (rc && old) (void)set_pte(c, l, old);
    return rc;
}

int ptep_cmpxchg(Cpu& c, PteLock& l, uint64_t expected, uint64_t nv, uint64_t& seen, bool& swapped)
{
    swapped = false;
    if (!pte_read(c, l.ref(), seen)) return -XEN_EFAULT;
    if ((seen ^ expected) & ~pte::AD) return 0;
    uint64_t old = seen;
    if (int rc = ptep_xchg(c, l, nv, old)) {
        seen = old;   // with the A/D bits the failed exchange handed back
        return rc;
    }
    swapped = true;
    return 0;
}

int ptep_modify_prot_start(Cpu& c, PteLock& l, uint64_t& old)
{
    if (!atomic_ok(c)) return get_and_clear_normal(c, l, old);
    return pte_read(c, l.ref(), old) ? 0 : -XEN_EFAULT;
}

int ptep_modify_prot_commit(Cpu& c, PteLock& l, uint64_t old, uint64_t nv)
{
    if (atomic_ok(c)) {
        bool fell_back;
        const int rc = write_atomic(c, l, nv, fell_back);
        if (!fell_back) return rc;
        // cmd 2 went away between start and commit: finish the Normal way.
        uint64_t cleared;
        if (int r = get_and_clear_normal(c, l, cleared)) return r;
        nv |= cleared & pte::AD;
    }
    (void)old;
    return set_pte(c, l, nv);
}

} // namespace pvmmu::guest
