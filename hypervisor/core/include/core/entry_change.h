// The reference rules of one checked entry change, in one place for the two
// writers that install differently: mod_entry_refs (mmu_update cmds 0/2,
// core/pagetable.h: an install that keeps hardware's A/D by its AdRule) and
// emulate_l1_write (core/pt_write.h: an install against exactly the value
// the write was computed from). docs/design.md §4's reference invariants hold whatever
// the install does, as long as it either writes `nv` or writes nothing.
#pragma once

#include "core/pagetable.h"

namespace pvmmu {

// The entry `o` of a table at `level` becomes `nv` (already adjusted and
// flag-checked): references for nv taken, `install(same_frame)` called (0
// when it wrote nv; any other value: it wrote nothing), then o's references
// dropped — or, when the install wrote nothing, nv's given back and its
// value returned. Same frame still mapped: only an L1's writable raise or
// drop changes a reference.
//
// Inline into each writer: a new frame's one call (a copy-on-write fault's
// PTE) pays no frame set-up of its own.
template <class Install>
[[nodiscard, gnu::always_inline]] inline int change_entry(Hypervisor& hv, Level level, Pte o, Pte nv, const MapContext& ctx, Install&& install)
{
    if (nv.present() && o.present() && nv.mfn() == o.mfn()) {
        const bool raise = level == Level::L1 && nv.writable() && !o.writable();
        const bool drop = level == Level::L1 && o.writable() && !nv.writable();
        if (raise) {
            if (int rc = get_raised_type(hv, nv.mfn(), ctx)) return rc;
        }
        if (int rc = install(true)) {
            if (raise) put_page_type(hv, nv.mfn());
            return rc;
        }
        if (drop) put_page_type_inline(hv, o.mfn());   // an L1's RW drop: mprotect, fork
        return 0;
    }
    if (nv.present()) {
        if (int rc = get_entry_refs(hv, level, nv, ctx)) return rc;
    }
    if (int rc = install(false)) {
        if (nv.present()) put_entry_refs(hv, level, nv);
        return rc;
    }
    if (o.present()) put_entry_refs(hv, level, o);
    return 0;
}

} // namespace pvmmu
