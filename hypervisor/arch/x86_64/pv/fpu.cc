// A PV vCPU's virtual CR0.TS (fpu.h): the fpu_taskswitch hypercall, and what
// clts, mov to CR0, the #NM it raises (emulate.cc) and a vCPU's start
// (run.cc) do with it. While the vCPU runs, the CPU's CR0.TS is the virtual one.
#include "cpu/cpu_bits.h"
#include "cpu/x86.h"
#include "pv/fpu.h"
#include "pv/hypercall.h"

namespace pvmmu::x86 {

void set_fpu_ts(VcpuArch& a, bool on)
{
    a.fpu_ts = on;
    if (on) write_cr0(read_cr0() | CR0_TS);
    else clts();
}

void guest_fpu_reset(Vcpu& v) { set_fpu_ts(arch(v), false); }

// fpu_taskswitch(set): the virtual CR0.TS, as Xen's: set, the next x87/SSE
// instruction raises #NM, delivered to the guest (which clears it); 0.
long do_fpu_taskswitch(Vcpu& v, HypercallFrame& f)
{
    set_fpu_ts(arch(v), uint32_t(f.arg[0]) != 0);
    return 0;
}

} // namespace pvmmu::x86
