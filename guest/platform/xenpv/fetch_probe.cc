// Memory::fetch on bare metal: an instruction fetch at a virtual address, by
// running a `ret` put there (docs/guest.md "Memory::fetch on bare metal").
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

// The leaf entry that maps va, by a walk of the domain's tables (the builder's
// L4, gpfn 0, which every vCPU runs on) read through the physmap. false when
// a level is not present or names a frame not the domain's.
bool leaf_entry(Va va, uint64_t& out)
{
    const Guest& g = rt::guest();
    Gpfn table = g.l4();
    for (unsigned l = 4; l >= 1; --l) {
        const auto* t = reinterpret_cast<const volatile uint64_t*>(g.va(table).v);
        const uint64_t e = t[table_index(va, Level(l))];
        if (!pte_present(e)) return false;
        if (l == 1) {
            out = e;
            return true;
        }
        if (!g.gpfn_of(pte_mfn(e), table)) return false;
    }
    return false;
}

// An instruction fetch at va (the NX checks of flag-range-basic and
// mprotect-semantics; docs/guest.md "Memory::fetch on bare metal"). Bytes at
// va are code only if someone put them there, so the probe puts its own: a
// `ret` at va's offset, written through the frame's physmap alias (data
// frames are writable there), then `call va`. First va is read, so the
// library's handler maps a demand-zero page as the sim's walker would (and a
// page x86 cannot read, it cannot execute either); its frame comes from a
// walk of the tables. When the alias is not writable (a page table, a frame
// the hypervisor holds) the probe cannot run: false, and the test records an
// ERROR, since that false is no NX result. Like a fetch it sets A and never D:
// a D the write put on the alias's entry is taken off again (with an INVLPG,
// so no TLB keeps the entry dirty) — va's own entry when va is the alias.
// The byte is back before it returns; while the probe runs another vCPU may
// see it, and must not write that byte (tests probe pages nobody writes
// meanwhile). The D taken off the alias is read, then written by
// update_va_mapping: a change of that physmap entry by another vCPU in
// between would be lost (the library changes physmap entries only when a
// frame becomes or stops being a page table, never a frame being probed). Probes of one
// page take turns (one must never call a byte another has just put back);
// a lock per page hash, so vCPUs probing the same pages in the same order
// follow each other instead of all waiting for one.
SpinLock g_fetch_locks[64];

} // namespace

bool XenpvCpu::fetch(Va va)
{
    uint64_t e, ae, word;
    Gpfn gpfn;
    if (!xenpv_load(va.v, &e) || !leaf_entry(va, e) || !rt::guest().gpfn_of(pte_mfn(e), gpfn)) return false;
    const Va alias = rt::guest().va(gpfn) + (va.v & (kPageSize - 1));
    const uint64_t at = alias.v & ~7ull;
    const unsigned shift = unsigned(alias.v & 7) * 8;
    SpinGuard turn(rt::this_cpu(), g_fetch_locks[(at >> kPageShift) % 64]);
    // A page the probe cannot patch is not known to be non-executable: an
    // ERROR, so no NX check passes without having been made.
    if (!leaf_entry(alias, ae) || !(ae & pte::RW) || !xenpv_load(at, &word)) {
        rt::error("xenpv: no fetch probe possible at %#llx (its frame is not writable through the physmap)",
                  (unsigned long long)va.v);
        return false;
    }
    const uint64_t patched = (word & ~(0xffull << shift)) | (0xc3ull << shift);
    uint64_t seen = word;
    if (xenpv_cmpxchg(at, &seen, patched) != 3) return false;
    // Cross-modifying code: a serialising instruction between the write and
    // the fetch (Intel SDM "Handling Self- and Cross-Modifying Code").
    unsigned a = 0, b, c, d;
    asm volatile("cpuid" : "+a"(a), "=b"(b), "=c"(c), "=d"(d) :: "memory");
    const bool ran = xenpv_fetch(va.v);
    // Only the byte goes back: a store to the word's other bytes meanwhile stays.
    for (seen = patched; ((seen >> shift) & 0xff) == 0xc3;) {
        const uint64_t back = (seen & ~(0xffull << shift)) | (word & (0xffull << shift));
        if (xenpv_cmpxchg(at, &seen, back) != 1) break;   // 3: put back; 0: faulted
    }
    uint64_t now;
    if (!(ae & pte::D) && leaf_entry(alias, now) && (now & pte::D))
        pvmmu::xenpv::hypercall(__HYPERVISOR_update_va_mapping, at & ~(kPageSize - 1), now & ~pte::D,
                                UVMF_INVLPG | UVMF_LOCAL);
    return ran;
}

} // namespace pvmmu::guest::xenpv
