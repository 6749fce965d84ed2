// Entering guest vCPUs and ending domains (run.cc): the idle loop, a CPU
// taking and leaving a vCPU, shutdown and crash, which end the run once no
// domain is left.
#pragma once

#include "cpu/traps.h"
#include "pv/domain.h"

namespace pvmmu::x86 {

// The counters of the vCPU running on this CPU when `origin`, the domain that
// asked for the work, is its own; nullptr otherwise (idle, or another's).
VcpuCounters* counters_for(const Domain* origin);

// Counts a built domain as running, until it shuts down.
void guest_domain_running();
// Domains that were ever counted running (an idle peer never is).
unsigned guest_domains_started();

// Sets this CPU up for guests: EFER.SCE and the SYSCALL MSRs. Every CPU.
void syscall_init();

// Runs vCPU `v` (of a domain guest_load built) on this CPU from its start
// registers, on its L4; never returns.
[[noreturn]] void guest_run(Vcpu& v);

// An idle CPU: halts with interrupts on (shootdowns are served) and runs the
// vCPU VCPUOP_up hands it (PerCpu::next, then a kVectorKick IPI). A vCPU
// still on this CPU is left first (cpu_leave_vcpu).
[[noreturn]] void cpu_idle();

// This CPU stops running its vCPU: the vCPU's last console line out, the
// hypervisor's tables loaded. When the vCPU's domain has shut down and this
// was its last vCPU on a CPU, the domain's memory is given back
// (core/domain_teardown.h), and once every domain's is, the core's
// invariants are checked and the run ends with the last shutdown's reason.
void cpu_leave_vcpu();

// The domain of the vCPU running on this CPU stops with `reason` (SHUTDOWN_*,
// <xen/sched.h>), or the one SCHEDOP_shutdown_code gave; its other vCPUs are kicked. When it was the last domain
// running, the run ends with HV_EXIT_SHUTDOWN + reason (boot/boot_defs.h) once
// every domain's memory is given back (cpu_leave_vcpu). This CPU idles.
[[noreturn]] void guest_shutdown(unsigned reason);

// True once v's domain has shut down: v must not run on (cpu/traps.cc and
// syscall_dispatch check it on the way back to the guest).
bool guest_domain_stopped(const Vcpu& v);

// A fault the guest cannot be told about: reported, then a crash shutdown.
[[noreturn]] void guest_crash(const TrapFrame& f, const char* why);

} // namespace pvmmu::x86
