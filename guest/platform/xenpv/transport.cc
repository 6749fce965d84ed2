// A vCPU's Transport and Memory on bare metal: hypercalls through the
// hypercall page (hypercall.h), memory as plain loads, stores and lock
// cmpxchg done by entry.S, whose faults the library's handler sees first and
// which answer false when it gives up (main.cc, xenpv_fault). The fetch
// probe is fetch_probe.cc.
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

long XenpvCpu::hypercall(unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4)
{
    return pvmmu::xenpv::hypercall(op, a0, a1, a2, a3, a4);
}

// Shootdown IPIs reach the hypervisor by themselves: nothing to poll.
void XenpvCpu::relax() { asm volatile("pause" ::: "memory"); }

bool XenpvCpu::load(Va va, uint64_t& out) { return xenpv_load(va.v, &out); }
bool XenpvCpu::store(Va va, uint64_t val) { return xenpv_store(va.v, val); }
uint64_t* XenpvCpu::direct(Va va, uint64_t) { return reinterpret_cast<uint64_t*>(va.v); }

bool XenpvCpu::cmpxchg(Va va, uint64_t& expected, uint64_t desired, bool& swapped)
{
    const int r = xenpv_cmpxchg(va.v, &expected, desired);
    swapped = r == 3;
    return r != 0;
}

} // namespace pvmmu::guest::xenpv
