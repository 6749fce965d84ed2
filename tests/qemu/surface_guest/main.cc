// docs/abi.md §12.1 on bare metal: every hypercall number
// 0-63 and every sub-op the table lists (and the numbers between and after
// them) is put to pvmmu-hv's real dispatcher through the hypercall page, and
// -ENOSYS must come back exactly where the table says -ENOSYS or has no row.
// The rows are compiled in from the table itself (surface_rows.h, generated
// by tests/qemu/tests.cmake at configure time). Arguments change nothing:
// pointers into the hypervisor's slots (-EFAULT), frames beyond memory,
// vCPU 1 (never initialised, so the domain needs `vcpus=2`), a console write
// of 0 bytes. Not called: iret (23), which would take the bad frame as its
// own and crash the domain; vm_assist's type rows (its sub-ops are commands,
// checked by abi_table_tests against the same function the handler calls).
// SCHEDOP_block, which would wait for an event, finds an upcall pending (set
// in the vCPU's vcpu_info first) and returns at once.
// The unit test abi_table_tests checks the same table on the host.
#include "tiny_guest.h"

#include "surface_rows.h"

using namespace tiny;

namespace {

volatile vcpu_info_t* g_vcpu0;   // vCPU 0's vcpu_info, shared_info's slot

constexpr uint64_t kBad = 0xffff800000001000ull;   // L4 slot 256: no guest pointer
constexpr uint64_t kNoFrame = 1ull << 40;           // a frame number beyond memory

// Hypercall nr's sub-op cmd (or, cmd < 0, the hypercall itself) with
// arguments that change nothing.
long probe(unsigned nr, long cmd)
{
    switch (nr) {
    case __HYPERVISOR_mmu_update: {
        const mmu_update_t req{(kNoFrame << 12) | uint64_t(cmd < 0 ? 0 : cmd), 0};
        return hypercall(nr, uint64_t(&req), 1, 0, DOMID_SELF);
    }
    case __HYPERVISOR_mmuext_op: {
        mmuext_op_t op{};
        op.cmd = unsigned(cmd < 0 ? 0 : cmd);
        op.arg1.mfn = kNoFrame;
        op.arg2.vcpumask.p = reinterpret_cast<void*>(kBad);
        return hypercall(nr, uint64_t(&op), 1, 0, DOMID_SELF);
    }
    case __HYPERVISOR_console_io: return hypercall(nr, uint64_t(cmd), 0, kBad);
    case __HYPERVISOR_vcpu_op: return hypercall(nr, uint64_t(cmd), 1, kBad);
    case __HYPERVISOR_fpu_taskswitch: return hypercall(nr, 0);
    case __HYPERVISOR_stack_switch: return hypercall(nr, 0, kBad);
    case __HYPERVISOR_update_va_mapping: return hypercall(nr, kBad, 0, UVMF_FLUSHTYPE_MASK);
    case __HYPERVISOR_vm_assist: return hypercall(nr, VMASST_CMD_disable, VMASST_TYPE_4gb_segments);
    case __HYPERVISOR_sched_op:
        if (cmd == SCHEDOP_block) g_vcpu0->evtchn_upcall_pending = 1;
        return hypercall(nr, cmd < 0 ? kBad : uint64_t(cmd), kBad);
    default: return hypercall(nr, cmd < 0 ? kBad : uint64_t(cmd), kBad, kBad, DOMID_SELF);
    }
}

const SurfaceRow* find(unsigned nr, long cmd)
{
    for (const SurfaceRow& r : kSurfaceRows)
        if (r.nr == nr && r.cmd == cmd) return &r;
    return nullptr;
}

// The largest sub-op listed for nr, or -1 when it has none.
long last_subop(unsigned nr)
{
    long last = -1;
    for (const SurfaceRow& r : kSurfaceRows)
        if (r.nr == nr && r.cmd > last) last = r.cmd;
    return last;
}

void expect(unsigned nr, long cmd, bool enosys)
{
    const long rc = probe(nr, cmd);
    ++g_checks;
    if ((rc == -XEN_ENOSYS) == enosys) return;
    ++g_failed;
    write("FAILED: hypercall ");
    write_hex(nr);
    if (cmd >= 0) {
        write(" sub-op ");
        write_hex(uint64_t(cmd));
    }
    write(enosys ? ": the table says -ENOSYS, the hypervisor answered " : ": the table says answered, the hypervisor gave -ENOSYS ");
    write_hex(uint64_t(rc));
    write("\n");
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si, uint64_t initial_sp)
{
    volatile shared_info_t* sh = map_shared_info(si, initial_sp);
    if (!sh) {
        write("surface guest: FAILED: shared_info cannot be mapped\n");
        shutdown(SHUTDOWN_crash);
    }
    g_vcpu0 = &sh->vcpu_info[0];
    for (unsigned nr = 0; nr < 64; ++nr) {
        if (nr == __HYPERVISOR_iret) continue;
        const SurfaceRow* h = find(nr, -1);
        const long last = last_subop(nr);
        if (last < 0 || !h || h->enosys) expect(nr, -1, !h || h->enosys);
        if (last < 0 || nr == __HYPERVISOR_vm_assist) continue;
        // mmu_update's command is 3 bits of ptr.
        const long end = nr == __HYPERVISOR_mmu_update ? 7 : last + 8;
        for (long cmd = 0; cmd <= end; ++cmd) {
            const SurfaceRow* s = find(nr, cmd);
            expect(nr, cmd, !h || h->enosys || !s || s->enosys);
        }
        if (nr != __HYPERVISOR_mmu_update) expect(nr, 1000, true);
    }
    write("surface guest: ");
    write_hex(g_checks);
    write(" checks\n");
    finish("surface guest");
}
