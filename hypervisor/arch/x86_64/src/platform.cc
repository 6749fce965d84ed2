// BareMetal; see arch/platform.h.
#include "arch/platform.h"

#include <pvmmu/abi.h>

#include "arch/exit.h"
#include "arch/shootdown.h"
#include "arch/x86.h"

namespace pvmmu::x86 {

void BareMetal::flush_tlbs(CpuMask cpus, FlushRequest req) { shootdown_flush(cpus, req); }

void BareMetal::relax()
{
    shootdown_serve();
    pause();
}

// No guest runs yet, so no guest address is valid: -EFAULT, as for any
// address a guest cannot access.
int BareMetal::copy_from_guest(Vcpu&, void*, Vaddr, size_t) { return -XEN_EFAULT; }
int BareMetal::copy_to_guest(Vcpu&, Vaddr, const void*, size_t) { return -XEN_EFAULT; }

// Loading a guest's L4 needs the hypervisor's slots in it and a ring-3 entry
// path; until those exist a NEW_BASEPTR cannot be issued (no vCPU runs).
void BareMetal::load_base(Vcpu&) { panic("load_base: guest address spaces are not implemented yet"); }

} // namespace pvmmu::x86
