// vcpu_op (SPEC §3; <xen/vcpu.h>): secondary vCPUs of a domain. Each vCPU is
// pinned to its own CPU (vCPU i on CPU first_cpu + i, domain_builder.h), which idles
// until the vCPU is brought up. docs/abi.md §10 lists where pvmmu differs
// from Xen.
#include <stddef.h>

#include <pvmmu/abi.h>

#include "arch/core_glue.h"
#include "arch/guest.h"
#include "arch/guest_surface.h"
#include "arch/lapic.h"
#include "arch/paging.h"
#include "arch/percpu.h"
#include "arch/quiesce.h"
#include "arch/selectors.h"
#include "arch/x86.h"
#include "core/refs.h"

namespace pvmmu::x86 {

namespace {

constexpr uint64_t kRflagsIf = 0x200, kRflagsFixed = 0x2;

// VCPUOP_initialise: the registers (user_regs), the L4 (ctrlreg[3]) and the
// segment bases (fs_base, gs_base_kernel, gs_base_user: -EINVAL where
// set_segment_base would refuse one) of a vCPU that is not up. The rest of
// vcpu_guest_context is not used: the vCPU sets its own trap table and
// callbacks once running.
long initialise_locked(Vcpu& self, Vcpu& t, uint64_t ctx_va);

// The vCPU is Busy while it changes: a second initialise meanwhile gets
// -EBUSY, an up -EINVAL; its state afterwards is Initialised, or what it was
// when the call fails.
long initialise(Vcpu& self, Vcpu& t, uint64_t ctx_va)
{
    std::atomic<VcpuState>& st = arch(t).state;
    VcpuState was = st.load(std::memory_order_acquire);
    do {
        if (was == VcpuState::Up) return -XEN_EEXIST;
        if (was == VcpuState::Busy) return -XEN_EBUSY;
    } while (!st.compare_exchange_weak(was, VcpuState::Busy, std::memory_order_acq_rel));
    const long rc = initialise_locked(self, t, ctx_va);
    st.store(rc ? was : VcpuState::Initialised, std::memory_order_release);
    return rc;
}

long initialise_locked(Vcpu& self, Vcpu& t, uint64_t ctx_va)
{
    VcpuArch& a = arch(t);
    Platform& p = core()->platform();
    cpu_user_regs_t r;
    uint64_t cr3, base[3];   // fs_base, gs_base_kernel, gs_base_user: adjacent in the context
    static_assert(offsetof(vcpu_guest_context_t, gs_base_user) == offsetof(vcpu_guest_context_t, fs_base) + 16);
    if (p.copy_from_guest(self, &r, Vaddr{ctx_va + offsetof(vcpu_guest_context_t, user_regs)}, sizeof(r)) ||
        p.copy_from_guest(self, &cr3, Vaddr{ctx_va + offsetof(vcpu_guest_context_t, ctrlreg[3])}, sizeof(cr3)) ||
        p.copy_from_guest(self, base, Vaddr{ctx_va + offsetof(vcpu_guest_context_t, fs_base)}, sizeof(base)))
        return -XEN_EFAULT;
    if (!guest_va_ok(r.rip) || !guest_va_ok(r.rsp)) return -XEN_EINVAL;
    if (!guest_va_ok(base[0]) || !guest_va_ok(base[1]) || !guest_va_ok(base[2])) return -XEN_EINVAL;
    const Mfn l4{xen_cr3_to_pfn(cr3)};
    if ((cr3 & (kPageSize - 1)) || !core()->mem().valid(l4)) return -XEN_EINVAL;
    // The vCPU holds a type reference to its L4, as NEW_BASEPTR takes one.
    if (int rc = get_page_and_type(*core(), l4, t.domain->id, PageType::L4)) return rc;
    if (t.has_table) put_page_and_type(*core(), t.guest_table);
    t.guest_table = l4;
    t.has_table = true;

    // The context's debugreg[], ctrlreg[4] and IOPL are not read (docs/abi.md
    // §12.3): the vCPU starts as a new one, whatever it had set before it
    // went down — no breakpoint armed, IOPL 0, CR4.DE clear.
    a.dr = DebugRegs{};
    a.iopl = 0;
    a.cr4_de = false;

    TrapFrame& f = a.start;
    f = TrapFrame{};
    f.r15 = r.r15, f.r14 = r.r14, f.r13 = r.r13, f.r12 = r.r12, f.r11 = r.r11, f.r10 = r.r10;
    f.r9 = r.r9, f.r8 = r.r8, f.rbp = r.rbp, f.rdi = r.rdi, f.rsi = r.rsi, f.rdx = r.rdx;
    f.rcx = r.rcx, f.rbx = r.rbx, f.rax = r.rax;
    f.rip = r.rip;
    f.cs = HV_SEL_GUEST_CS64;
    f.rflags = kRflagsIf | kRflagsFixed;
    f.rsp = r.rsp;
    f.ss = HV_SEL_GUEST_DS;
    a.fs_base = base[0], a.gs_base_kernel = base[1], a.gs_base_user = base[2];
    return 0;
}

} // namespace

long vcpu_up(Vcpu& t)
{
    VcpuState was = VcpuState::Initialised;
    if (!arch(t).state.compare_exchange_strong(was, VcpuState::Up, std::memory_order_acq_rel))
        return was == VcpuState::Up ? 0 : -XEN_EINVAL;
    guest_domain(t).nr_up.fetch_add(1, std::memory_order_acq_rel);
    PerCpu& c = g_cpus[t.cpu];
    c.next.store(&t, std::memory_order_release);
    lapic_send_fixed(c.apic_id, kVectorKick);
    return 0;
}

// vcpu_op(cmd, vcpuid, arg).
long do_vcpu_op(Vcpu& v, TrapFrame& f)
{
    Domain& d = *v.domain;
    // An int cmd and an unsigned int vCPU in Xen's prototype: the registers'
    // high halves are not looked at.
    const uint32_t cmd = uint32_t(f.rdi), id = uint32_t(f.rsi);
    if (id >= d.nr_vcpus) return -XEN_ENOENT;   // Xen checks the vCPU first
    if (!arch_subop_known(__HYPERVISOR_vcpu_op, cmd)) return -XEN_ENOSYS;
    Vcpu& t = d.vcpus[id];
    switch (cmd) {
    case VCPUOP_initialise:
        return initialise(v, t, f.rdx);
    case VCPUOP_up:
        return vcpu_up(t);
    case VCPUOP_down:
        // Only the calling vCPU: its CPU goes idle. Its state is gone (it must
        // be initialised again), where Xen would resume it.
        if (&t != &v) return -XEN_EINVAL;
        // The last vCPU up going down: nothing can bring a vCPU of the
        // domain up again (only its own vCPUs can), so the domain shuts
        // down with poweroff, as Xen does, and the run can end.
        if (guest_domain(v).nr_up.fetch_sub(1, std::memory_order_acq_rel) == 1) guest_shutdown(SHUTDOWN_poweroff);
        // Off the vCPU's tables before it is Down: once Down, another vCPU
        // may initialise it and drop the last reference to its old L4. Out of
        // the hypercall's section first: leave() may enter one of its own.
        section_leave();
        cli();
        cpu_leave_vcpu();
        arch(v).state.store(VcpuState::Down, std::memory_order_release);
        cpu_idle();
    case VCPUOP_is_up:
        return arch(t).state.load(std::memory_order_acquire) == VcpuState::Up;
    default:
        return -XEN_ENOSYS;
    }
}

} // namespace pvmmu::x86
