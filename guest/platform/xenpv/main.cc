// The guest runtime's platform on bare metal (docs/design.md §6, docs/abi.md §10): a
// Xen PV guest kernel in ring 3 of pvmmu-hv. Hypercalls go through the
// hypercall page (the Transport, transport.cc), memory is plain loads, stores
// and lock cmpxchg whose faults the library's handler sees first (the Memory,
// transport.cc and fetch_probe.cc), the console is console_io or Xen's
// console ring (console.cc), start_info becomes the library's BootInfo
// (boot_info.cc), shared_info gives the time (shared_info.cc), vcpu.cc brings
// the vCPUs up, and the run ends with SCHEDOP_shutdown.
//
// This file holds the platform's entry points from head.S and entry.S.
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

namespace {

// The registers xenpv_page_fault saved, then the rest of the bounce frame.
struct FaultFrame {
    uint64_t r15, r14, r13, r12, r11, r10, r9, r8, rbp, rdi, rsi, rdx, rcx, rbx, rax;
    uint64_t error, rip, cs, rflags, rsp, ss;
};

} // namespace

void shutdown(unsigned reason)
{
    console_drain();
    sched_shutdown_t s{reason};
    hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&s));
}

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest;
using namespace pvmmu::guest::xenpv;

// From head.S: start_info and the RSP the hypervisor gave (the top of the
// boot structures: every gpfn below it is taken).
extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    for (auto* f = __init_array_start; f != __init_array_end; ++f) (*f)();
    g_si = si;
    use_console_ring(*si);
    if (!map_shared_info(*si)) {
        rt::print("xenpv: shared_info could not be mapped");
        rt::print("Test result: ERROR");
        shutdown(SHUTDOWN_crash);
    }
    g_boot = boot_info(*si, initial_sp);
    xenpv_switch_stack(stack_top(0), boot_cpu);
}

// A page fault (entry.S): the library's handler first (spurious faults,
// demand-zero pages); if it gives up, an access of entry.S's returns false;
// anything else is a bug of the guest program and crashes the domain.
extern "C" void xenpv_fault(FaultFrame* f)
{
    Cpu& c = rt::this_cpu();
    const uint64_t va = fault_address(c.id);
    // Page-fault error code ("Page-Fault Exceptions"): P, W/R, I/D.
    const FaultInfo fi{Va{va}, (f->error & 16) ? Access::Exec : (f->error & 2) ? Access::Write : Access::Read,
                       (f->error & 1) != 0};
    if (rt::fault(c, fi)) return;
    if ((f->error & 16) && f->rip == va && *reinterpret_cast<const uint64_t*>(f->rsp) == uint64_t(&xenpv_fetch_ret)) {
        f->rip = uint64_t(&xenpv_fetch_ret);   // the probe's `call va` faulted (entry.S)
        f->rsp += 8;
        f->rax = 0;
        return;
    }
    for (const uint64_t* e = xenpv_extable; e != xenpv_extable_end; e += 2) {
        if (f->rip == e[0]) {
            f->rip = e[1];
            return;
        }
    }
    rt::print("xenpv: vCPU %u: unhandled page fault at rip %#llx, address %#llx, error %#llx", c.id,
              (unsigned long long)f->rip, (unsigned long long)va, (unsigned long long)f->error);
    rt::print("Test result: FAILURE");
    shutdown(SHUTDOWN_crash);
}

extern "C" void __cxa_pure_virtual() { shutdown(SHUTDOWN_crash); }
