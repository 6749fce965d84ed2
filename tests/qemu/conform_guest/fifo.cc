// The FIFO event ABI from the guest's side (<xen/event_channel.h>;
// docs/abi.md §12.6), run last on pvmmu (qemu_guest_conform) and on Xen
// 4.17 as dom0 (xen_conform_guest) with the same answers: the errnos of
// init_control, expand_array and set_priority under 2-level and then under
// FIFO, an IPI to itself masked in its event word and linked by
// EVTCHNOP_unmask (HEAD, READY, the upcall flag), and EVTCHNOP_reset going
// back to 2-level. Upcalls stay masked throughout: nothing is delivered.
#include "tiny_guest.h"

#include <xen/event_channel.h>

using namespace tiny;

namespace {

constexpr uint64_t kUnreadable = XENPV_VIRT_BASE + (1ull << 38);
constexpr uint32_t kLastOffset = 4096 - sizeof(evtchn_fifo_control_block_t);   // 4024
constexpr unsigned kDefault = EVTCHN_FIFO_PRIORITY_DEFAULT;

alignas(4096) volatile uint8_t g_fifo_blocks[4096];   // vCPU 0's control block at 0, vCPU 1's at 512
alignas(4096) volatile event_word_t g_fifo_array[1024];

long evtchn(unsigned cmd, const void* arg) { return hypercall(__HYPERVISOR_event_channel_op, cmd, uint64_t(arg)); }

long init_control(uint64_t gfn, uint32_t offset, uint32_t vcpu, uint8_t* link_bits = nullptr)
{
    evtchn_init_control_t a{};
    a.control_gfn = gfn;
    a.offset = offset;
    a.vcpu = vcpu;
    const long rc = evtchn(EVTCHNOP_init_control, &a);
    if (link_bits) *link_bits = a.link_bits;
    return rc;
}

long expand(uint64_t gfn)
{
    evtchn_expand_array_t a{gfn};
    return evtchn(EVTCHNOP_expand_array, &a);
}

long set_priority(evtchn_port_t port, uint32_t priority)
{
    evtchn_set_priority_t a{port, priority};
    return evtchn(EVTCHNOP_set_priority, &a);
}

long port_op(unsigned cmd, evtchn_port_t port)
{
    evtchn_send_t p{port};   // evtchn_close_t and evtchn_unmask_t have the same one field
    return evtchn(cmd, &p);
}

evtchn_port_t bind_ipi()
{
    evtchn_bind_ipi_t b{0, 0};
    check("EVTCHNOP_bind_ipi(vCPU 0)", evtchn(EVTCHNOP_bind_ipi, &b), 0);
    return b.port;
}

// As check, printing what came when it is not what Xen gives.
void checkw(const char* what, uint64_t got, uint64_t want)
{
    check(what, got == want, 1);
    if (got == want) return;
    write("  got ");
    write_hex(got);
    write(", want ");
    write_hex(want);
    write("\n");
}

uint64_t mfn_of(const start_info_t* si, const volatile void* p)
{
    return p2m(si)[(uint64_t(p) - XENPV_VIRT_BASE) >> 12];
}

} // namespace

// vi: vCPU 0's vcpu_info, its upcall masked.
void fifo_checks(const start_info_t* si, volatile vcpu_info_t* vi)
{
    const uint64_t blocks = mfn_of(si, g_fifo_blocks), array = mfn_of(si, g_fifo_array);
    const uint64_t l4 = p2m(si)[(si->pt_base - XENPV_VIRT_BASE) >> 12];
    vi->evtchn_upcall_mask = 1;

    // Under 2-level.
    const evtchn_port_t early = bind_ipi();
    check("EVTCHNOP_set_priority under 2-level: -ENOSYS", set_priority(early, 3), -XEN_ENOSYS);
    check("EVTCHNOP_set_priority of port 4095: -EINVAL", set_priority(4095, 3), -XEN_EINVAL);
    check("EVTCHNOP_expand_array under 2-level: -EOPNOTSUPP", expand(array), -XEN_EOPNOTSUPP);
    check("EVTCHNOP_init_control of an absent vCPU: -ENOENT", init_control(blocks, 0, 4000), -XEN_ENOENT);
    check("EVTCHNOP_init_control crossing the page: -EINVAL", init_control(blocks, kLastOffset + 8, 0), -XEN_EINVAL);
    check("EVTCHNOP_init_control, offset not 8-aligned: -EINVAL", init_control(blocks, 4, 0), -XEN_EINVAL);
    check("EVTCHNOP_init_control of the L4 in use: -EINVAL", init_control(l4, 0, 0), -XEN_EINVAL);
    check("EVTCHNOP_init_control of a frame beyond memory: -EINVAL", init_control(1ull << 40, 0, 0), -XEN_EINVAL);
    check("EVTCHNOP_init_control, unreadable: -EFAULT",
          hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_init_control, kUnreadable), -XEN_EFAULT);
    check("  still 2-level: expand_array -EOPNOTSUPP", expand(array), -XEN_EOPNOTSUPP);

    // The switch, as Linux makes it: cleared control blocks, a page of masked events.
    for (unsigned i = 0; i < 4096; ++i) g_fifo_blocks[i] = 0;
    for (unsigned i = 0; i < 1024; ++i) g_fifo_array[i] = 1u << EVTCHN_FIFO_MASKED;
    uint8_t bits = 0;
    check("EVTCHNOP_init_control(vCPU 0)", init_control(blocks, 0, 0, &bits), 0);
    check("  link_bits 17", bits, EVTCHN_FIFO_LINK_BITS);
    check("  again: -EINVAL", init_control(blocks, 512, 0), -XEN_EINVAL);
    if (hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0) >= 0)
        check("EVTCHNOP_init_control(vCPU 1), the same frame", init_control(blocks, 512, 1), 0);
    check("EVTCHNOP_expand_array of the L4 in use: -EINVAL", expand(l4), -XEN_EINVAL);
    check("EVTCHNOP_expand_array, unreadable: -EFAULT",
          hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_expand_array, kUnreadable), -XEN_EFAULT);
    check("EVTCHNOP_expand_array", expand(array), 0);
    check("EVTCHNOP_set_priority 16: -EINVAL", set_priority(early, EVTCHN_FIFO_PRIORITY_MIN + 1), -XEN_EINVAL);
    check("EVTCHNOP_set_priority 15", set_priority(early, EVTCHN_FIFO_PRIORITY_MIN), 0);
    check("EVTCHNOP_set_priority of port 4095: -EINVAL", set_priority(4095, 3), -XEN_EINVAL);

    // An IPI to itself: pending in its masked word, linked by the unmask.
    auto* block = reinterpret_cast<volatile evtchn_fifo_control_block_t*>(g_fifo_blocks);
    const evtchn_port_t p = bind_ipi();
    vi->evtchn_upcall_pending = 0;
    check("EVTCHNOP_send on it", port_op(EVTCHNOP_send, p), 0);
    checkw("  its word: PENDING, MASKED", g_fifo_array[p], (1u << EVTCHN_FIFO_PENDING) | (1u << EVTCHN_FIFO_MASKED));
    checkw("  no READY bit", block->ready, 0);
    check("  no upcall", vi->evtchn_upcall_pending, 0);
    check("EVTCHNOP_unmask of it", port_op(EVTCHNOP_unmask, p), 0);
    checkw("  its word: PENDING, LINKED", g_fifo_array[p], (1u << EVTCHN_FIFO_PENDING) | (1u << EVTCHN_FIFO_LINKED));
    checkw("  READY: the default priority's bit", block->ready, 1u << kDefault);
    check("  HEAD of that queue: the port", block->head[kDefault], p);
    check("  evtchn_upcall_pending", vi->evtchn_upcall_pending, 1);
    check("  evtchn_upcall_mask still set", vi->evtchn_upcall_mask, 1);
    check("EVTCHNOP_close of it", port_op(EVTCHNOP_close, p), 0);
    checkw("  its word: PENDING cleared, still LINKED", g_fifo_array[p], 1u << EVTCHN_FIFO_LINKED);

    // Back to 2-level.
    evtchn_reset_t r{DOMID_SELF};
    check("EVTCHNOP_reset", evtchn(EVTCHNOP_reset, &r), 0);
    check("  2-level again: expand_array -EOPNOTSUPP", expand(array), -XEN_EOPNOTSUPP);
    const evtchn_port_t late = bind_ipi();
    check("  set_priority -ENOSYS", set_priority(late, 3), -XEN_ENOSYS);
    check("EVTCHNOP_close of it", port_op(EVTCHNOP_close, late), 0);
    vi->evtchn_upcall_pending = 0;
}
