// What the portable core needs from the machine it runs on. The sim
// (hypervisor/sim) and bare metal (hypervisor/arch/x86_64) each implement it; unit
// tests may use a fake. Only rare or per-batch operations go through it: the per-PTE
// path touches memory directly through MachineMemory.
#pragma once

#include <stddef.h>

#include <pvmmu/abi.h>


#include "core/hypercall_frame.h"
#include "core/types.h"

namespace pvmmu {

struct Vcpu;

enum class FlushKind : uint8_t { All, Page };

struct FlushRequest {
    FlushKind kind = FlushKind::All;
    Vaddr va{0};      // FlushKind::Page only
};

class Platform {
public:
    // Flush the TLBs of the given CPUs (the caller's own CPU included if named)
    // and return only when every one has acknowledged (docs/design.md §5). A full flush on a
    // CPU must be recorded with TlbClock::record_flush.
    virtual void flush_tlbs(CpuMask cpus, FlushRequest req) = 0;

    // Called in every spin-wait: serve pending shootdowns addressed to this CPU.
    virtual void relax() = 0;

    // Guest memory, at a guest virtual address of the given vCPU's address space.
    // Return 0 or -EFAULT (Xen's errno, negated).
    virtual int copy_from_guest(Vcpu& v, void* dst, Vaddr src, size_t n) = 0;
    virtual int copy_to_guest(Vcpu& v, Vaddr dst, const void* src, size_t n) = 0;

    // Address-space switch of the calling vCPU (NEW_BASEPTR): load the new root.
    virtual void load_base(Vcpu& v) = 0;

    // The core has written entries of page-table page `m` and is about to unlock
    // it. A platform whose walkers are not coherent with the data cache cleans the
    // page here, so walkers see the hypervisor's writes (docs/design.md §5); once per page
    // per batch, not per entry.
    virtual void tables_written(Mfn m) { (void)m; }

    // The entry a validated L4 of domain `owner` holds in hypervisor-reserved
    // slot `slot` (HvConfig::l4_reserved_*): bare metal maps itself there so a
    // guest's L4 can stay loaded across hypercalls and traps (Xen's
    // init_xen_l4_slots); the entry must not be user-accessible, except in a
    // benchmark-only domain's unsafe native window (docs/abi.md §10). Guests
    // may not write these slots, an L4 validates only with them empty, and
    // devalidation empties them again. 0 (the default): the slot stays empty.
    virtual uint64_t reserved_l4_entry(DomId /*owner*/, unsigned /*slot*/) const { return 0; }

    // MMUEXT_SET_LDT of the calling vCPU, its arguments checked as Xen checks
    // them (core/mmuext.cc): `ents` descriptors at guest virtual address
    // `base` (page-aligned; base 0 when ents is 0) become its LDT. 0 or a
    // negated errno, nothing changed then. A platform without segmentation
    // (the sim: no guest ever loads a selector) has no LDT to load: an empty
    // one is taken, any other is -EOPNOTSUPP (docs/abi.md §12.1).
    virtual int set_ldt(Vcpu& /*v*/, Vaddr /*base*/, uint32_t ents) { return ents ? -XEN_EOPNOTSUPP : 0; }

    // The machine's own hypercalls (bare metal: traps, descriptors, vCPUs,
    // console, ...): the core's hypercall() comes here for every number its
    // table lacks, so that a direct call and a multicall entry reach them the
    // same way. Arguments in f.arg, as in Xen's ABI; a preemptible one
    // rewrites them and returns preempted(). Default (the sim): -ENOSYS.
    virtual HcResult arch_hypercall(Vcpu& /*v*/, HypercallFrame& /*f*/) { return done(-XEN_ENOSYS); }

protected:
    ~Platform() = default;
};

} // namespace pvmmu
