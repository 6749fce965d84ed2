// shared_info (xen/xen.h), mapped by the guest as on Xen (where it is a frame
// of the hypervisor's, mapped nowhere yet) over a page of its own. On pvmmu
// it is a frame of the domain's, mapped in the physmap too. The platform
// reads two things there: a vCPU's CR2 on a page fault, and the time.
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

// A whole page of its own: nothing else may share the page whose mapping
// changes.
union alignas(kPageSize) SharedPage {
    shared_info_t info;
    uint8_t bytes[kPageSize];
} g_shared_page;
static_assert(sizeof(SharedPage) == kPageSize);
shared_info_t& g_shared = g_shared_page.info;

} // namespace

bool map_shared_info(const start_info_t& si)
{
    const uint64_t e = (si.shared_info & pte::ADDR) | pte::P | pte::RW | pte::US | pte::A | pte::D | pte::NX;
    return hypercall(__HYPERVISOR_update_va_mapping, uint64_t(&g_shared_page), e, UVMF_INVLPG | UVMF_LOCAL) == 0;
}

uint64_t fault_address(unsigned vcpu) { return g_shared.vcpu_info[vcpu].arch.cr2; }

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest::xenpv;

namespace pvmmu::guest::rt {

// Nanoseconds since the hypervisor booted, from this vCPU's vcpu_time_info
// in shared_info (docs/abi.md §10 "Time"), as Xen documents it: system_time
// plus the TSC's advance since tsc_timestamp, shifted by tsc_shift and scaled
// by tsc_to_system_mul / 2^32. Read while version is even and unchanged.
uint64_t now_ns()
{
    const volatile vcpu_time_info& t = g_shared.vcpu_info[this_cpu().id].time;
    uint32_t version;
    uint64_t tsc_timestamp, system_time, tsc;
    uint32_t mul;
    int8_t shift;
    do {
        version = t.version;
        asm volatile("" ::: "memory");
        tsc_timestamp = t.tsc_timestamp;
        system_time = t.system_time;
        mul = t.tsc_to_system_mul;
        shift = t.tsc_shift;
        uint32_t lo, hi;
        asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
        tsc = (uint64_t(hi) << 32) | lo;
        asm volatile("" ::: "memory");
    } while ((version & 1) || version != t.version);
    uint64_t delta = tsc - tsc_timestamp;
    delta = shift >= 0 ? delta << shift : delta >> -shift;
    return system_time + uint64_t((unsigned __int128)delta * mul >> 32);
}

} // namespace pvmmu::guest::rt
