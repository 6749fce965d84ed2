// Event channels and timers from the guest's side (docs/abi.md §12.6), run
// on pvmmu (qemu_guest_conform) and on Xen 4.17 as dom0 (xen_conform_guest)
// with the same answers: each sub-op's errnos, a local event (an IPI to
// itself) seen in shared_info's pending and mask bitmaps and in the
// vcpu_info's selector and upcall flag with upcalls masked, VIRQ_TIMER
// raised by a single-shot timer whose deadline has passed, and last the
// upcall to the event callback on a hypercall's return once unmasked.
// Nothing here blocks: SCHEDOP_poll is only asked with a port already pending.
// Last, an iret to a frame whose CS the CPU refuses: the #GP at that frame.
#include "tiny_guest.h"

#include <xen/event_channel.h>
#include <xen/version.h>
#include <xen/callback.h>
#include <xen/vcpu.h>

using namespace tiny;

// main.cc's recovery: conform_call(fn) returns fn's RAX, or -1 when a bounce
// reached conform_stubs + 16 * n, which records n in conform_vector and the
// frame's RIP, CS, RFLAGS (no error code) in conform_w.
extern "C" __attribute__((visibility("hidden"))) uint64_t conform_call(const void* fn, uint64_t a0, uint64_t a1,
                                                                       uint64_t a2);
extern "C" __attribute__((visibility("hidden"))) char conform_stubs[], conform_int[];
extern "C" __attribute__((visibility("hidden"))) uint64_t conform_vector, conform_w[3];
extern "C" __attribute__((visibility("hidden"))) char conform_bad_cs_iret[], conform_bad_cs_target[];

// An iret hypercall (struct iret_context: flags, RIP, CS, RFLAGS, RSP, SS,
// the stub pushing RAX, R11, RCX) to the next instruction with CS =
// FLAT_RING3_SS64 with RPL 0 (kernel mode; the hypervisor forces RPL 3): a
// data segment, which the CPU's IRETQ refuses (#GP).
asm(R"(
    .pushsection .text
    .globl conform_bad_cs_iret, conform_bad_cs_target
    .hidden conform_bad_cs_iret, conform_bad_cs_target
conform_bad_cs_iret:
    mov %rsp, %rax
    pushq $0xe02b
    pushq %rax
    pushq $0x202
    pushq $0xe028
    lea conform_bad_cs_target(%rip), %rax
    pushq %rax
    pushq $0
    jmp hypercall_page + 23 * 32
conform_bad_cs_target:
    ud2
    .popsection
)");

namespace {

// The event and failsafe callbacks' slots among conform_stubs (no vector uses them).
constexpr unsigned kEventSlot = 0x91, kFailsafeSlot = 0x92;

// xen_version(XENVER_version), called through conform_call: Linux's
// xen_force_evtchn_callback, which expects a pending, unmasked upcall on
// this hypercall's return.
uint64_t version_call(uint64_t, uint64_t, uint64_t) { return uint64_t(hypercall(__HYPERVISOR_xen_version, XENVER_version, 0)); }

// An address in the hypervisor's half that no guest may read: -EFAULT.
constexpr uint64_t kUnreadable = XENPV_VIRT_BASE + (1ull << 38);
// A port past every valid bucket (4095 is the last 2-level port).
constexpr evtchn_port_t kFarPort = 4095;
// No domain has this id (below DOMID_FIRST_RESERVED, never given out here).
constexpr domid_t kNoDomain = 0x7000;

long evtchn(unsigned cmd, const void* arg) { return hypercall(__HYPERVISOR_event_channel_op, cmd, uint64_t(arg)); }

long port_op(unsigned cmd, evtchn_port_t port)
{
    evtchn_send_t p{port};   // evtchn_close_t and evtchn_unmask_t have the same one field
    return evtchn(cmd, &p);
}

long vcpu_op(unsigned cmd, unsigned vcpu, const void* arg)
{
    return hypercall(__HYPERVISOR_vcpu_op, cmd, vcpu, uint64_t(arg));
}

bool bit(const volatile xen_ulong_t* words, unsigned n) { return (words[n / 64] >> (n % 64)) & 1; }

void clear_bit(volatile xen_ulong_t* words, unsigned n)
{
    __atomic_fetch_and(&words[n / 64], ~(xen_ulong_t(1) << (n % 64)), __ATOMIC_SEQ_CST);
}

void set_bit(volatile xen_ulong_t* words, unsigned n)
{
    __atomic_fetch_or(&words[n / 64], xen_ulong_t(1) << (n % 64), __ATOMIC_SEQ_CST);
}

// Port p neither pending nor masked, and nothing in the vCPU's selector or upcall flag.
void quiet(volatile shared_info_t* sh, volatile vcpu_info_t* vi, evtchn_port_t p)
{
    clear_bit(sh->evtchn_pending, p);
    clear_bit(sh->evtchn_mask, p);
    vi->evtchn_pending_sel = 0;
    vi->evtchn_upcall_pending = 0;
}

long status_of(evtchn_port_t port, evtchn_status_t& s)
{
    s = evtchn_status_t{};
    s.dom = DOMID_SELF;
    s.port = port;
    return evtchn(EVTCHNOP_status, &s);
}

void errnos()
{
    evtchn_alloc_unbound_t a{DOMID_SELF, DOMID_SELF, 0};
    check("EVTCHNOP_alloc_unbound(SELF, SELF)", evtchn(EVTCHNOP_alloc_unbound, &a), 0);
    check("  a port above 0", a.port > 0, 1);
    evtchn_alloc_unbound_t none{kNoDomain, DOMID_SELF, 0};
    check("EVTCHNOP_alloc_unbound of no domain: -ESRCH", evtchn(EVTCHNOP_alloc_unbound, &none), -XEN_ESRCH);
    check("EVTCHNOP_alloc_unbound, unreadable: -EFAULT",
          hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_alloc_unbound, kUnreadable), -XEN_EFAULT);
    evtchn_status_t s;
    check("EVTCHNOP_status of it", status_of(a.port, s), 0);
    check("  unbound", s.status, EVTCHNSTAT_unbound);
    check("EVTCHNOP_status of port 4095: -EINVAL", status_of(kFarPort, s), -XEN_EINVAL);
    check("EVTCHNOP_status, unreadable: -EFAULT",
          hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_status, kUnreadable), -XEN_EFAULT);
    check("EVTCHNOP_send on an unbound port: dropped, 0", port_op(EVTCHNOP_send, a.port), 0);

    evtchn_bind_ipi_t ipi{0, 0};
    check("EVTCHNOP_bind_ipi(vCPU 0)", evtchn(EVTCHNOP_bind_ipi, &ipi), 0);
    check("EVTCHNOP_status of it", status_of(ipi.port, s), 0);
    check("  IPI on vCPU 0", s.status == EVTCHNSTAT_ipi && s.vcpu == 0, 1);
    evtchn_bind_ipi_t far_ipi{4000, 0};
    check("EVTCHNOP_bind_ipi of an absent vCPU: -ENOENT", evtchn(EVTCHNOP_bind_ipi, &far_ipi), -XEN_ENOENT);

    evtchn_bind_virq_t dbg{VIRQ_DEBUG, 0, 0};
    check("EVTCHNOP_bind_virq(VIRQ_DEBUG, vCPU 0)", evtchn(EVTCHNOP_bind_virq, &dbg), 0);
    check("EVTCHNOP_status of it", status_of(dbg.port, s), 0);
    check("  VIRQ_DEBUG", s.status == EVTCHNSTAT_virq && s.u.virq == VIRQ_DEBUG, 1);
    evtchn_bind_virq_t again{VIRQ_DEBUG, 0, 0};
    check("  again: -EEXIST", evtchn(EVTCHNOP_bind_virq, &again), -XEN_EEXIST);
    evtchn_bind_virq_t big{NR_VIRQS, 0, 0};
    check("EVTCHNOP_bind_virq of VIRQ 24: -EINVAL", evtchn(EVTCHNOP_bind_virq, &big), -XEN_EINVAL);
    evtchn_bind_virq_t global{VIRQ_CON_RING, 1, 0};
    check("EVTCHNOP_bind_virq of a global VIRQ on vCPU 1: -EINVAL", evtchn(EVTCHNOP_bind_virq, &global), -XEN_EINVAL);
    evtchn_bind_virq_t absent{VIRQ_DEBUG, 4000, 0};
    check("EVTCHNOP_bind_virq on an absent vCPU: -ENOENT", evtchn(EVTCHNOP_bind_virq, &absent), -XEN_ENOENT);
    check("EVTCHNOP_send on a VIRQ port: -EINVAL", port_op(EVTCHNOP_send, dbg.port), -XEN_EINVAL);

    check("EVTCHNOP_close of the unbound port", port_op(EVTCHNOP_close, a.port), 0);
    check("  again: -EINVAL", port_op(EVTCHNOP_close, a.port), -XEN_EINVAL);
    check("EVTCHNOP_send on it, closed: -EINVAL", port_op(EVTCHNOP_send, a.port), -XEN_EINVAL);
    check("EVTCHNOP_close of port 0: -EINVAL", port_op(EVTCHNOP_close, 0), -XEN_EINVAL);
    check("EVTCHNOP_close of port 4095: -EINVAL", port_op(EVTCHNOP_close, kFarPort), -XEN_EINVAL);
    check("EVTCHNOP_send on port 4095: -EINVAL", port_op(EVTCHNOP_send, kFarPort), -XEN_EINVAL);
    check("EVTCHNOP_unmask of port 4095: -EINVAL", port_op(EVTCHNOP_unmask, kFarPort), -XEN_EINVAL);
    check("EVTCHNOP_close of the VIRQ_DEBUG port", port_op(EVTCHNOP_close, dbg.port), 0);
    check("EVTCHNOP_close of the IPI port", port_op(EVTCHNOP_close, ipi.port), 0);
}

// An IPI to itself: Xen's order of the bits (pending, then, unless masked,
// the selector and the upcall flag), and unmask raising what was held back.
void local_event(volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    evtchn_bind_ipi_t ipi{0, 0};
    check("EVTCHNOP_bind_ipi(vCPU 0) for a local event", evtchn(EVTCHNOP_bind_ipi, &ipi), 0);
    const evtchn_port_t p = ipi.port;
    quiet(sh, vi, p);
    check("EVTCHNOP_send on it", port_op(EVTCHNOP_send, p), 0);
    check("  its pending bit in shared_info", bit(sh->evtchn_pending, p), 1);
    check("  its word's bit in evtchn_pending_sel", (vi->evtchn_pending_sel >> (p / 64)) & 1, 1);
    check("  evtchn_upcall_pending", vi->evtchn_upcall_pending, 1);
    check("  evtchn_upcall_mask still set", vi->evtchn_upcall_mask, 1);

    sched_poll_t poll{};
    evtchn_port_t ports[1] = {p};
    set_xen_guest_handle(poll.ports, ports);
    poll.nr_ports = 1;
    check("SCHEDOP_poll of the pending port: at once, 0", hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&poll)), 0);
    evtchn_port_t far[1] = {5000};
    set_xen_guest_handle(poll.ports, far);
    check("SCHEDOP_poll of port 5000: -EINVAL", hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&poll)),
          -XEN_EINVAL);
    poll.nr_ports = 129;
    check("SCHEDOP_poll of 129 ports: -EINVAL", hypercall(__HYPERVISOR_sched_op, SCHEDOP_poll, uint64_t(&poll)),
          -XEN_EINVAL);

    quiet(sh, vi, p);
    set_bit(sh->evtchn_mask, p);
    check("EVTCHNOP_send on it, masked", port_op(EVTCHNOP_send, p), 0);
    check("  its pending bit", bit(sh->evtchn_pending, p), 1);
    check("  no selector bit", (vi->evtchn_pending_sel >> (p / 64)) & 1, 0);
    check("  no upcall", vi->evtchn_upcall_pending, 0);
    check("EVTCHNOP_unmask of it", port_op(EVTCHNOP_unmask, p), 0);
    check("  its mask bit cleared", bit(sh->evtchn_mask, p), 0);
    check("  its word's bit in evtchn_pending_sel", (vi->evtchn_pending_sel >> (p / 64)) & 1, 1);
    check("  evtchn_upcall_pending", vi->evtchn_upcall_pending, 1);
    check("EVTCHNOP_close of it", port_op(EVTCHNOP_close, p), 0);
    check("  its pending bit cleared", bit(sh->evtchn_pending, p), 0);
    quiet(sh, vi, p);
}

// The VCPUOP timers' errnos, and VIRQ_TIMER from a single-shot deadline
// already past (taken, and fired at once) with the periodic timer stopped.
void timers(volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    vcpu_set_periodic_timer_t fast{100};
    check("VCPUOP_set_periodic_timer of 100 ns: -EINVAL", vcpu_op(VCPUOP_set_periodic_timer, 0, &fast), -XEN_EINVAL);
    check("VCPUOP_set_periodic_timer, unreadable: -EFAULT",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_set_periodic_timer, 0, kUnreadable), -XEN_EFAULT);
    check("VCPUOP_stop_periodic_timer", vcpu_op(VCPUOP_stop_periodic_timer, 0, nullptr), 0);
    vcpu_set_singleshot_timer_t past{1, VCPU_SSHOTTMR_future};
    // Debian's Xen 4.17 ignores the flag, as <xen/vcpu.h> allows: no -ETIME.
    check("VCPUOP_set_singleshot_timer, past, VCPU_SSHOTTMR_future: taken, 0",
          vcpu_op(VCPUOP_set_singleshot_timer, 0, &past), 0);
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) >= 0) {
        past.flags = 0;
        check("VCPUOP_set_singleshot_timer of vCPU 1: -EINVAL", vcpu_op(VCPUOP_set_singleshot_timer, 1, &past),
              -XEN_EINVAL);
        check("VCPUOP_stop_singleshot_timer of vCPU 1: -EINVAL", vcpu_op(VCPUOP_stop_singleshot_timer, 1, nullptr),
              -XEN_EINVAL);
    }
    check("VCPUOP_stop_singleshot_timer", vcpu_op(VCPUOP_stop_singleshot_timer, 0, nullptr), 0);

    evtchn_bind_virq_t t{VIRQ_TIMER, 0, 0};
    check("EVTCHNOP_bind_virq(VIRQ_TIMER, vCPU 0)", evtchn(EVTCHNOP_bind_virq, &t), 0);
    quiet(sh, vi, t.port);
    for (int i = 0; i < 100; ++i) hypercall(__HYPERVISOR_xen_version, XENVER_version, 0);
    check("  no tick with both timers stopped", bit(sh->evtchn_pending, t.port), 0);
    vcpu_set_singleshot_timer_t now{1, 0};
    check("VCPUOP_set_singleshot_timer, past, no flags: 0", vcpu_op(VCPUOP_set_singleshot_timer, 0, &now), 0);
    // Fired at once; seen after a hypercall's return at the latest.
    bool fired = false;
    for (int i = 0; i < 1000 && !fired; ++i) {
        hypercall(__HYPERVISOR_xen_version, XENVER_version, 0);
        fired = bit(sh->evtchn_pending, t.port);
    }
    check("  VIRQ_TIMER pending", fired, 1);
    check("  evtchn_upcall_pending", vi->evtchn_upcall_pending, 1);
    check("EVTCHNOP_close of the VIRQ_TIMER port", port_op(EVTCHNOP_close, t.port), 0);
    quiet(sh, vi, t.port);
}

// The upcall: an IPI to itself, pending while upcalls are masked, arrives in
// the event callback on the return of the first hypercall after the guest
// clears evtchn_upcall_mask; the frame's RFLAGS.IF says they were unmasked,
// and the upcall is masked on the way in. The callback never returns (the
// recovery goes back to conform_call's caller), so the mask stays set.
void upcall(volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    callback_register_t cb{CALLBACKTYPE_event, 0, uint64_t(conform_stubs + 16 * kEventSlot)};
    check("CALLBACKOP_register event", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    evtchn_bind_ipi_t ipi{0, 0};
    check("EVTCHNOP_bind_ipi(vCPU 0) for an upcall", evtchn(EVTCHNOP_bind_ipi, &ipi), 0);
    quiet(sh, vi, ipi.port);
    check("EVTCHNOP_send on it, upcalls masked", port_op(EVTCHNOP_send, ipi.port), 0);
    conform_vector = 0;
    check("  xen_version returns: no upcall while masked",
          long(conform_call(reinterpret_cast<const void*>(version_call), 0, 0, 0)) >= 0 && conform_vector == 0, 1);
    vi->evtchn_upcall_mask = 0;
    check("xen_version with the upcall unmasked: the event callback",
          long(conform_call(reinterpret_cast<const void*>(version_call), 0, 0, 0)), -1);
    check("  reached its slot", long(conform_vector), kEventSlot);
    check("  the frame's RFLAGS.IF set (upcalls were unmasked)", long((conform_w[2] >> 9) & 1), 1);
    check("  evtchn_upcall_mask set on delivery", vi->evtchn_upcall_mask, 1);
    check("  the port still pending (the guest clears it)", bit(sh->evtchn_pending, ipi.port), 1);
    check("EVTCHNOP_close of it", port_op(EVTCHNOP_close, ipi.port), 0);
    quiet(sh, vi, ipi.port);
}

// The upcall mask across an exception's bounce (INT $0x80, DPL 3): the
// frame's RFLAGS.IF is !evtchn_upcall_mask, and an entry with TI_SET_IF (an
// interrupt gate) masks upcalls on delivery, one without leaves the mask.
// No upcall is pending meanwhile. The mask is left set.
void trap_mask(volatile vcpu_info_t* vi)
{
    const void* int80 = conform_int + 4 * 0x80;
    const uint64_t stub = uint64_t(conform_stubs + 16 * 0x80);
    trap_info_t gate[2] = {{0x80, 3, FLAT_RING3_CS64, stub}, {}};
    TI_SET_IF(&gate[0], 1);
    vi->evtchn_upcall_pending = 0;
    check("set_trap_table: INT $0x80 an interrupt gate (TI_SET_IF)",
          hypercall(__HYPERVISOR_set_trap_table, uint64_t(gate)), 0);
    vi->evtchn_upcall_mask = 0;
    check("INT $0x80 with upcalls unmasked: delivered", long(conform_call(int80, 0, 0, 0)), -1);
    check("  the frame's RFLAGS.IF set", long((conform_w[2] >> 9) & 1), 1);
    check("  evtchn_upcall_mask set by the interrupt gate", vi->evtchn_upcall_mask, 1);
    check("INT $0x80 with upcalls masked: delivered", long(conform_call(int80, 0, 0, 0)), -1);
    check("  the frame's RFLAGS.IF clear", long((conform_w[2] >> 9) & 1), 0);
    gate[0].flags = 3;   // DPL 3, IF clear (TI_SET_IF only sets the bit)
    check("set_trap_table: INT $0x80 a trap gate", hypercall(__HYPERVISOR_set_trap_table, uint64_t(gate)), 0);
    vi->evtchn_upcall_mask = 0;
    check("INT $0x80 through it, unmasked: delivered", long(conform_call(int80, 0, 0, 0)), -1);
    check("  evtchn_upcall_mask left clear", vi->evtchn_upcall_mask, 0);
    vi->evtchn_upcall_mask = 1;
}

// An iret the CPU refuses (CS a data segment): the #GP is the guest's, at
// the frame it asked for (its RIP, its CS with RPL 0 as in kernel mode), the
// selector as error code, as Xen 4.17 delivers it (not the failsafe
// callback, which it keeps for segment loads on a context switch). The
// failsafe callback registered with CALLBACKF_mask_events, which both take,
// is not called.
void refused_iret()
{
    callback_register_t cb{CALLBACKTYPE_failsafe, CALLBACKF_mask_events, uint64_t(conform_stubs + 16 * kFailsafeSlot)};
    check("CALLBACKOP_register failsafe, CALLBACKF_mask_events",
          hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)), 0);
    conform_vector = 0;
    check("iret to a data segment as CS: delivered", long(conform_call(conform_bad_cs_iret, 0, 0, 0)), -1);
    check("  #GP, not the failsafe callback", long(conform_vector), 13);
    check("  error code: the selector", long(conform_w[0]), 0xe028);
    check("  RIP: the frame's", conform_w[1] == uint64_t(conform_bad_cs_target), 1);
    check("  CS: the frame's", long(conform_w[2]), 0xe028);
}

} // namespace

// vi: vCPU 0's registered vcpu_info, its upcall masked.
void event_checks(volatile shared_info_t* sh, volatile vcpu_info_t* vi)
{
    check("event checks: vCPU 0's upcall masked", vi->evtchn_upcall_mask, 1);
    errnos();
    local_event(sh, vi);
    timers(sh, vi);
    trap_mask(vi);
    upcall(sh, vi);
    refused_iret();
}
