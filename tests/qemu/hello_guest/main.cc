// The smallest pvmmu guest kernel (first guest milestone): it talks
// to the hypervisor only through the hypercall page, proves that hypercalls
// reach both the hypervisor's own table and the core's, that bad guest
// pointers are -EFAULT (an unmapped address, the hypervisor's slots, a
// read-only page table) and bad arguments the ABI's errno, that the 32-bit
// code selector cannot be loaded, then shuts down.
// Built four times (tests/qemu/tests.cmake): `hello-guest` ends with
// SHUTDOWN_poweroff after its checks (it runs with 2 vCPUs: vCPU 1 is never
// started); the others must end the domain as a crash, never the hypervisor:
// `crash-guest` (HELLO_CRASH) executes ud2 with no trap table,
// `crash-pf-guest` (HELLO_CRASH_PF) writes to an unmapped page with no trap
// table (the crash must report the CPU's error code, U/S set),
// `bad-iret-guest` (HELLO_BAD_IRET) returns by iret to a non-canonical RIP,
// `bad-stack-guest` (HELLO_BAD_STACK) takes a #UD with its handler set but
// RSP in the hypervisor's slots, so the bounce frame cannot be written.
#include <stddef.h>
#include <stdint.h>

#include "tiny_guest.h"

using namespace tiny;

// A far return to FLAT_RING3_CS32 at 0x1000 (nothing is mapped there): the
// selector is Xen's ring-3 compatibility-mode code segment, so it loads and
// the fetch at 0x1000 raises #PF (what SYSCALL from there does: the conform
// guest, docs/security.md "Compatibility mode"). The handlers (trap table
// entries 13 and 14) return the vector from far_return_to_cs32 on the stack
// it was called with.
static_assert(FLAT_RING3_CS32 == 0xe023);
#define HIDDEN __attribute__((visibility("hidden")))   // RIP-relative: no GOT in a static image
extern "C" HIDDEN uint64_t far_return_to_cs32();
extern "C" HIDDEN void far_return_gp(), far_return_pf();
asm(R"(
    .pushsection .text
    .hidden far_return_to_cs32, far_return_gp, far_return_pf
    .globl far_return_to_cs32, far_return_gp, far_return_pf
far_return_to_cs32:
    mov %rsp, far_return_rsp(%rip)
    pushq $0xe023
    pushq $0x1000
    lretq
far_return_gp:
    mov $13, %eax
    jmp 1f
far_return_pf:
    mov $14, %eax
1:  mov far_return_rsp(%rip), %rsp
    ret
    .popsection
    .pushsection .bss
    .balign 8
far_return_rsp: .quad 0
    .popsection
)");

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    check("console_io write", write("hello guest: running in ring 3\n"), 0);
    // A line in the hypervisor's own words reaches the console marked with
    // the domain, "(d1) " (pv/console.cc): it ends no run and judges no domain.
    check("console_io in the hypervisor's words",
          write("pvmmu: no domain left running; ending (forged by the guest)\n"), 0);
    check("start_info magic", si->magic[0] == 'x' && si->magic[1] == 'e' && si->magic[2] == 'n', 1);
    uint16_t cs;
    asm volatile("mov %%cs, %0" : "=r"(cs));
    check("running in ring 3 on FLAT_RING3_CS64", cs, FLAT_RING3_CS64);

    // The hypervisor's direct map, an unmapped guest address, a non-canonical one.
    check("console_io from the hypervisor's slots",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0xffff830000000000), -XEN_EFAULT);
    check("console_io from an unmapped address",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0x0000100000000000), -XEN_EFAULT);
    check("console_io from a non-canonical address",
          hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 8, 0x0000800000000000), -XEN_EFAULT);
    check("console_io negative count", hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, uint64_t(-1), 0),
          -XEN_EINVAL);
    check("console_io unknown command", hypercall(__HYPERVISOR_console_io, 77, 0, 0), -XEN_ENOSYS);
    // A count of 2^31 - 1 from the domain's last 2176 bytes (its last gpfn is
    // free): seventeen 128-byte lines over three rounds of the hypercall (it
    // continues after 1024 bytes), then -EFAULT at the end of the physmap.
    {
        char* end = reinterpret_cast<char*>(si->pt_base + (si->nr_pages << 12));
        char* p = end - 17 * 128;
        for (int l = 0; l < 17; ++l, p += 128) {
            for (int i = 0; i < 127; ++i) p[i] = i < 29 ? "hello guest: continued write "[i] : '.';
            p[127] = '\n';
        }
        check("console_io up to the end of memory",
              hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 0x7fffffff, uint64_t(end - 17 * 128)), -XEN_EFAULT);
    }
    // The hypervisor copies 8 bytes at a time, then the rest byte by byte:
    // a fault in either part is -EFAULT (hypervisor/arch/x86_64/mm/guest_copy.S).
    {
        const uint64_t end = si->pt_base + (si->nr_pages << 12);
        check("console_io whose word straddles the end of memory",
              hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 16, end - 4), -XEN_EFAULT);
        check("console_io whose last bytes pass the end of memory",
              hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 20, end - 19), -XEN_EFAULT);
        check("xen_version whose second word passes the end of memory",
              hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, end - 8), -XEN_EFAULT);
    }

    // The core's table: xen_version, and a copy_to_guest into the read-only L4.
    check("xen_version", hypercall(__HYPERVISOR_xen_version, XENVER_version, 0) > 0, 1);
    check("xen_version into a read-only page table",
          hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, si->pt_base), -XEN_EFAULT);
    xen_extraversion_t extra;
    check("xen_version extraversion", hypercall(__HYPERVISOR_xen_version, XENVER_extraversion, uint64_t(&extra)), 0);
    check("mmu_update with an unmapped request array",
          hypercall(__HYPERVISOR_mmu_update, 0x0000100000000000, 1, 0, DOMID_SELF), -XEN_EFAULT);

    check("unknown hypercall", hypercall(63), -XEN_ENOSYS);
    check("sched_op unknown command", hypercall(__HYPERVISOR_sched_op, 77, 0), -XEN_ENOSYS);
    sched_shutdown_t bad{SHUTDOWN_MAX + 1};
    check("shutdown with a bad reason", hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, uint64_t(&bad)),
          -XEN_EINVAL);
    check("shutdown with an unmapped argument",
          hypercall(__HYPERVISOR_sched_op, SCHEDOP_shutdown, 0x0000100000000000), -XEN_EFAULT);
    check("yield", hypercall(__HYPERVISOR_sched_op, SCHEDOP_yield, 0), 0);

    // The console ring (start_info.console.domU) and its event channel.
    const uint64_t* p2m = reinterpret_cast<const uint64_t*>(si->mfn_list);
    auto* ring = reinterpret_cast<xencons_interface*>(si->pt_base + ((si->console.domU.mfn - p2m[0]) << 12));
    static const char kRingLine[] = "hello guest: through the console ring\n";
    for (const char* c = kRingLine; *c; ++c) ring->out[MASK_XENCONS_IDX(ring->out_prod++, ring->out)] = *c;
    evtchn_send_t send{si->console.domU.evtchn};
    check("EVTCHNOP_send on the console port", hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send)), 0);
    check("the ring was read", ring->out_cons == ring->out_prod, 1);
    send.port = si->console.domU.evtchn + 1;
    check("EVTCHNOP_send on another port", hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send)),
          -XEN_EINVAL);
    check("EVTCHNOP_send from an unmapped argument",
          hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, 0x0000100000000000), -XEN_EFAULT);
    check("event_channel_op unknown command", hypercall(__HYPERVISOR_event_channel_op, 77, 0), -XEN_ENOSYS);
    const XENCONS_RING_IDX cons = ring->out_cons;
    ring->out_prod = cons + 5000;   // more than the ring holds
    send.port = si->console.domU.evtchn;
    check("EVTCHNOP_send on a corrupt ring", hypercall(__HYPERVISOR_event_channel_op, EVTCHNOP_send, uint64_t(&send)),
          -XEN_EINVAL);
    check("a corrupt ring is left as it is", ring->out_cons == cons, 1);
    ring->out_prod = cons;
    // shared_info is the guest's frame, but the hypervisor writes it (CR2 of
    // a page fault): the guest may map it read-only, never make it a table.
    {
        const uint64_t mfn = si->shared_info >> 12, g = mfn - p2m[0];
        const uint64_t first_l1 = si->nr_pt_frames - (si->nr_pages + 511) / 512;
        mmu_update_t u{(p2m[first_l1 + g / 512] << 12) + (g % 512) * 8, (mfn << 12) | 0x25};   // P|US|A
        check("map shared_info read-only", hypercall(__HYPERVISOR_mmu_update, uint64_t(&u), 1, 0, DOMID_SELF), 0);
        mmuext_op_t pin{};
        pin.cmd = MMUEXT_PIN_L1_TABLE;
        pin.arg1.mfn = mfn;
        check("pin shared_info as an L1", hypercall(__HYPERVISOR_mmuext_op, uint64_t(&pin), 1, 0, DOMID_SELF),
              -XEN_EINVAL);
        u.val |= 2;   // RW again
        check("map shared_info writable again", hypercall(__HYPERVISOR_mmu_update, uint64_t(&u), 1, 0, DOMID_SELF), 0);
    }

    // The trap ABI: handlers must be guest code addresses.
    trap_info_t bad_traps[] = {{6, 0, FLAT_RING3_CS64, 0xffff828000100000}, {0, 0, 0, 0}};
    check("trap handler in the hypervisor's slots", hypercall(__HYPERVISOR_set_trap_table, uint64_t(bad_traps)),
          -XEN_EINVAL);
    bad_traps[0].address = 0x0000800000000000;
    check("non-canonical trap handler", hypercall(__HYPERVISOR_set_trap_table, uint64_t(bad_traps)), -XEN_EINVAL);
    check("unmapped trap table", hypercall(__HYPERVISOR_set_trap_table, 0x0000100000000000), -XEN_EFAULT);
    check("clearing the trap table", hypercall(__HYPERVISOR_set_trap_table, 0), 0);
    check("stack_switch to a ring-0 selector: taken, its RPL forced to 3 (Xen)",
          hypercall(__HYPERVISOR_stack_switch, 0xe010, 0x8000300000), 0);
    check("stack_switch to a stack in the hypervisor's slots", hypercall(__HYPERVISOR_stack_switch, FLAT_KERNEL_SS,
                                                                        0xffff828000100000), -XEN_EINVAL);
    callback_register_t cb{CALLBACKTYPE_sysenter_deprecated, 0, 0x8000300000};
    check("callback_op with a bad type", hypercall(__HYPERVISOR_callback_op, CALLBACKOP_register, uint64_t(&cb)),
          -XEN_EINVAL);

    // vcpu_op: vCPU 1 exists and is down; vCPU 2 does not exist.
    check("vcpu 0 is up", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 0, 0), 1);
    check("vcpu 1 is down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);
    check("no vcpu 2", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 2, 0), -XEN_ENOENT);
    check("up before initialise", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_up, 1, 0), -XEN_EINVAL);
    check("down of another vcpu", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_down, 1, 0), -XEN_EINVAL);
    check("initialise from an unmapped context",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, 0x0000100000000000), -XEN_EFAULT);
    static vcpu_guest_context_t ctx;
    ctx.flags = VGCF_in_kernel;   // else it starts in user mode, which needs ctrlreg[1]
    ctx.user_regs.rip = 0x0000800000000000;
    ctx.user_regs.rsp = 0x8000300000;
    ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
    check("initialise with a non-canonical rip", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)),
          -XEN_EINVAL);
    ctx.user_regs.rip = 0x8000300000;
    ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[1]);   // the L3
    check("initialise with an L3 as cr3", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)),
          -XEN_EINVAL);
    // The context's segment bases: set_segment_base's checks (docs/abi.md §10).
    ctx.ctrlreg[3] = xen_pfn_to_cr3(reinterpret_cast<const uint64_t*>(si->mfn_list)[0]);
    ctx.fs_base = 0x0000800000000000;
    check("initialise with a non-canonical fs_base",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), -XEN_EINVAL);
    ctx.fs_base = 0, ctx.gs_base_kernel = 0xffff828000000000;
    check("initialise with gs_base_kernel in the hypervisor's slots",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), -XEN_EINVAL);
    ctx.gs_base_kernel = 0, ctx.gs_base_user = 0x8000000000000000;
    check("initialise with a non-canonical gs_base_user",
          hypercall(__HYPERVISOR_vcpu_op, VCPUOP_initialise, 1, uint64_t(&ctx)), -XEN_EINVAL);
    check("vcpu 1 still down", hypercall(__HYPERVISOR_vcpu_op, VCPUOP_is_up, 1, 0), 0);
    check("vcpu_op unknown command", hypercall(__HYPERVISOR_vcpu_op, 77, 0, 0), -XEN_ENOSYS);

    // Compatibility mode through Xen's FLAT_RING3_CS32 (docs/boot.md, the GDT).
    trap_info_t far[] = {{13, 0, FLAT_RING3_CS64, uint64_t(&far_return_gp)},
                         {14, 0, FLAT_RING3_CS64, uint64_t(&far_return_pf)}, {0, 0, 0, 0}};
    check("#GP and #PF handlers", hypercall(__HYPERVISOR_set_trap_table, uint64_t(far)), 0);
    check("a far return to FLAT_RING3_CS32 loads it: #PF at 0x1000", far_return_to_cs32(), 14);
    check("clearing the trap table again", hypercall(__HYPERVISOR_set_trap_table, 0), 0);

    // pvmmu_op (docs/abi.md §10): invalid arguments first, each changing nothing.
    constexpr uint64_t kUnmapped = 0x0000100000000000;
    check("pvmmu_op unknown command", hypercall(__HYPERVISOR_pvmmu_op, 77, 0, 0), -XEN_ENOSYS);
    static pvmmu_vcpu_counters pc;
    check("counters of vCPU 2 (absent)", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, 2, uint64_t(&pc)),
          -XEN_EINVAL);
    check("counters into an unmapped address",
          hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, 0, kUnmapped), -XEN_EFAULT);
    check("counters into a read-only page table",
          hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, 0, si->pt_base), -XEN_EFAULT);
    check("counters of vCPU 1", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_counters, 1, uint64_t(&pc)), 0);
    check("vCPU 1 never ran: nothing counted", pc.faults | pc.flush_all | pc.flush_page | pc.shootdowns_sent |
          pc.shootdowns_served, 0);
    // The call counts (PVMMUOP_vcpu_calls): one mmu_update of 5 requests, a
    // multicall of two mmu_updates (3 and 2 requests) and one emulated write
    // to a page table, between two reads; nothing else calls meanwhile (check
    // prints, so the results are checked after), and each read counts itself
    // only once it has finished, so the first read is the one more call seen.
    static pvmmu_vcpu_calls c0, c1;
    check("calls of vCPU 2 (absent)", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_calls, 2, uint64_t(&c0)),
          -XEN_EINVAL);
    check("calls into an unmapped address", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_calls, 0, kUnmapped),
          -XEN_EFAULT);
    {
        const uint64_t mfn = si->shared_info >> 12, g = mfn - p2m[0];
        const uint64_t first_l1 = si->nr_pt_frames - (si->nr_pages + 511) / 512;
        const mmu_update_t u{(p2m[first_l1 + g / 512] << 12) + (g % 512) * 8, (mfn << 12) | 0x27};   // P|RW|US|A
        static mmu_update_t five[5] = {u, u, u, u, u};
        multicall_entry_t mc[2] = {};
        for (multicall_entry_t& e : mc) e.op = __HYPERVISOR_mmu_update, e.args[0] = uint64_t(five), e.args[3] = DOMID_SELF;
        mc[0].args[1] = 3, mc[1].args[1] = 2;
        volatile uint64_t* const entry = gpfn_bytes(first_l1 + g / 512) + g % 512;   // mapped read-only
        const long r0 = hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_calls, 0, uint64_t(&c0));
        const long r1 = hypercall(__HYPERVISOR_mmu_update, uint64_t(five), 5, 0, DOMID_SELF);
        const long r2 = hypercall(__HYPERVISOR_multicall, uint64_t(mc), 2);
        *entry = u.val;   // the CPU's #PF, emulated
        const long r3 = hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_vcpu_calls, 0, uint64_t(&c1));
        check("calls of vCPU 0, before", r0, 0);
        check("mmu_update of 5 requests", r1, 0);
        check("multicall of two mmu_updates", r2 | long(mc[0].result) | long(mc[1].result), 0);
        check("calls of vCPU 0, after", r3, 0);
        check("  hypercalls: the first read, mmu_update, multicall", long(c1.hypercalls - c0.hypercalls), 3);
        check("  multicalls", long(c1.multicalls - c0.multicalls), 1);
        check("  multicall entries", long(c1.multicall_entries - c0.multicall_entries), 2);
        check("  mmu_update calls", long(c1.mmu_updates - c0.mmu_updates), 3);
        check("  mmu_update requests", long(c1.mmu_update_requests - c0.mmu_update_requests), 10);
        check("  emulated page-table writes", long(c1.pt_writes - c0.pt_writes), 1);
        check("  no continuations", long(c1.continuations - c0.continuations), 0);
    }
    static pvmmu_facts facts;
    check("facts into an unmapped address", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, kUnmapped), -XEN_EFAULT);
    check("facts", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_facts, uint64_t(&facts)), 0);
    check("no peer without peer=", facts.peer_domid, DOMID_INVALID);
    check("the hypervisor frame is not ours", facts.hypervisor_mfn - p2m[0] < si->nr_pages, 0);
    uint64_t retries = ~0ull;
    check("install retries into an unmapped address",
          hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_install_retries, kUnmapped), -XEN_EFAULT);
    check("install retries, alone on the machine",
          hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_install_retries, uint64_t(&retries)), 0);
    check("install retries written", retries != ~0ull, 1);
    check("the invariant check without the module word invariant-check",
          hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_check_invariants, 0), -XEN_EPERM);
    check("deny an unknown command", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, PVMMU_DENY_ALL + 1), -XEN_EINVAL);
    check("deny above bit 31", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, 1ull << 32 | PVMMU_DENY_PIN), -XEN_EINVAL);
    mmuext_op_t flush{};
    flush.cmd = MMUEXT_TLB_FLUSH_LOCAL;
    check("flush before any denial", hypercall(__HYPERVISOR_mmuext_op, uint64_t(&flush), 1, 0, DOMID_SELF), 0);
    check("deny TLB flushes", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, PVMMU_DENY_TLB_FLUSH), 0);
    check("a denied flush", hypercall(__HYPERVISOR_mmuext_op, uint64_t(&flush), 1, 0, DOMID_SELF), -XEN_EPERM);
    check("deny nothing more", hypercall(__HYPERVISOR_pvmmu_op, PVMMUOP_deny, 0), 0);
    check("a denial is never lifted", hypercall(__HYPERVISOR_mmuext_op, uint64_t(&flush), 1, 0, DOMID_SELF),
          -XEN_EPERM);

#ifdef HELLO_CRASH
    write("hello guest: executing ud2 with no trap table\n");
    asm volatile("ud2");
#endif
#ifdef HELLO_CRASH_PF
    write("hello guest: writing to an unmapped page with no trap table\n");
    *reinterpret_cast<volatile uint64_t*>(0x1000) = 1;
#endif
#ifdef HELLO_BAD_IRET
    // struct iret_context after the stub's pushes: flags, rip, cs, rflags, rsp, ss.
    // CS with RPL 0 (FLAT_KERNEL_CS64 & ~3), as an event's frame in kernel
    // mode has it: RPL 3 would be a return to user mode, which this guest
    // has no page tables for.
    write("hello guest: iret to a non-canonical rip\n");
    asm volatile("pushq $0xe02b; pushq %%rsp; pushq $0x202; pushq $0xe030; pushq %0; pushq $0; jmp *%1"
                 : : "r"(0x0000800000000000ull), "r"(hypercall_page + __HYPERVISOR_iret * 32));
#endif
#ifdef HELLO_BAD_STACK
    trap_info_t ud[] = {{6, 0, FLAT_RING3_CS64, uint64_t(&xenpv_start)}, {0, 0, 0, 0}};
    check("a #UD handler", hypercall(__HYPERVISOR_set_trap_table, uint64_t(ud)), 0);
    write("hello guest: ud2 with rsp in the hypervisor's slots\n");
    asm volatile("mov %0, %%rsp; ud2" : : "r"(0xffff830000100000ull));
#endif
    finish("hello guest");
}
