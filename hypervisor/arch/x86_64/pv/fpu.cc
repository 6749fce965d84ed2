// A PV vCPU's virtual CR0.TS (fpu.h): the fpu_taskswitch hypercall, and what
// clts, mov to CR0, the #NM it raises (emulate.cc) and a vCPU's start
// (run.cc) do with it. While the vCPU runs, the CPU's CR0.TS is the virtual one.
#include <cstdint>

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

namespace {
// An FXSAVE image of the state after FNINIT with MXCSR at its reset value
// (SDM vol. 1, "FXSAVE Area"): FCW 0x37f, every x87 register empty, MXCSR
// 0x1f80 (all SIMD exceptions masked), the XMM registers zero.
struct alignas(16) FxImage {
    uint16_t fcw = 0x37f;
    uint8_t rest0[22] = {};
    uint32_t mxcsr = 0x1f80;
    uint8_t rest1[484] = {};
};
static_assert(sizeof(FxImage) == 512);
constexpr FxImage kFxInit{};
} // namespace

// A vCPU starts with the FPU's initial state, not what the CPU last held.
void guest_fpu_reset(Vcpu& v)
{
    set_fpu_ts(arch(v), false);
    asm volatile("fxrstor64 %0" : : "m"(kFxInit));
}

// fpu_taskswitch(set): the virtual CR0.TS, as Xen's: set, the next x87/SSE
// instruction raises #NM, delivered to the guest (which clears it); 0.
long do_fpu_taskswitch(Vcpu& v, HypercallFrame& f)
{
    set_fpu_ts(arch(v), uint32_t(f.arg[0]) != 0);
    return 0;
}

} // namespace pvmmu::x86
