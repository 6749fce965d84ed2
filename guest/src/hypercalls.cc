// Counted hypercalls and their scratch-page arguments; see guest/hypercalls.h.
#include "guest/hypercalls.h"

namespace pvmmu::guest {

long hypercall(Cpu& c, unsigned op, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4)
{
    ++c.stats.hypercalls;
    if (op == __HYPERVISOR_mmu_update) ++c.stats.mmu_update_calls;
    if (op == __HYPERVISOR_mmuext_op) ++c.stats.mmuext_calls;
    if (op == __HYPERVISOR_multicall) ++c.stats.multicalls;
    return c.hc.hypercall(op, a0, a1, a2, a3, a4);
}

bool put_words(Cpu& c, Va dst, const void* src, uint64_t n)
{
    const uint8_t* p = static_cast<const uint8_t*>(src);
    for (uint64_t off = 0; off < n; off += 8) {
        uint64_t w;
        __builtin_memcpy(&w, p + off, 8);
        if (!c.mem.store(dst + off, w)) return false;
    }
    return true;
}

bool get_words(Cpu& c, Va src, void* dst, uint64_t n)
{
    uint8_t* p = static_cast<uint8_t*>(dst);
    for (uint64_t off = 0; off < n; off += 8) {
        uint64_t w;
        if (!c.mem.load(src + off, w)) return false;
        __builtin_memcpy(p + off, &w, 8);
    }
    return true;
}

bool put_mmu_req(Cpu& c, unsigned i, uint64_t ptr, uint64_t val)
{
    const Va at = c.scratch + uint64_t(i) * sizeof(mmu_update_t);
    return i < kMaxBatchRequests && c.mem.store(at, ptr) && c.mem.store(at + 8, val);
}

// With MmuConfig::multicall the call is a multicall of one entry, whose
// result is the mmu_update's.
long mmu_update_scratch(Cpu& c, unsigned n, uint32_t* done, unsigned domid)
{
    const Va pdone = c.scratch_at(scratch::kDone);
    long rc;
    if (c.guest && c.guest->config.multicall) {
        static_assert(sizeof(multicall_entry_t) == 64 && __builtin_offsetof(multicall_entry_t, result) == 8);
        const Va mc = c.scratch_at(scratch::kMulticall);
        const uint64_t entry[8] = {__HYPERVISOR_mmu_update, 0, c.scratch.v, n, pdone.v, domid, 0, 0};
        if (!put_words(c, mc, entry, sizeof(entry))) return -XEN_EFAULT;
        ++c.stats.mmu_update_calls;
        rc = hypercall(c, __HYPERVISOR_multicall, mc.v, 1);
        uint64_t result = 0;
        if (rc == 0) rc = c.mem.load(mc + 8, result) ? long(result) : -XEN_EFAULT;
    } else {
        rc = hypercall(c, __HYPERVISOR_mmu_update, c.scratch.v, n, pdone.v, domid);
    }
    if (done) {
        uint64_t w = 0;
        *done = c.mem.load(pdone, w) ? uint32_t(w) : 0;
    }
    return rc;
}

long mmu_update_one(Cpu& c, Maddr ptr, unsigned cmd, uint64_t val)
{
    if (!put_mmu_req(c, 0, ptr.v | cmd, val)) return -XEN_EFAULT;
    ++c.stats.req[cmd & PVMMU_MMU_CMD_MASK];
    return mmu_update_scratch(c, 1);
}

bool put_mmuext(Cpu& c, unsigned i, unsigned cmd, uint64_t arg1, uint64_t arg2)
{
    const Va at = c.scratch_at(scratch::kOps) + uint64_t(i) * sizeof(mmuext_op_t);
    return i < scratch::kMaxOps && c.mem.store(at, cmd) && c.mem.store(at + 8, arg1) &&
           c.mem.store(at + 16, arg2);
}

long mmuext_scratch(Cpu& c, unsigned n, uint32_t* done)
{
    const Va pdone = c.scratch_at(scratch::kDone);
    const long rc = hypercall(c, __HYPERVISOR_mmuext_op, c.scratch_at(scratch::kOps).v, n, pdone.v, DOMID_SELF);
    if (done) {
        uint64_t w = 0;
        *done = c.mem.load(pdone, w) ? uint32_t(w) : 0;
    }
    return rc;
}

long mmuext_one(Cpu& c, unsigned cmd, uint64_t arg1, uint64_t arg2)
{
    if (!put_mmuext(c, 0, cmd, arg1, arg2)) return -XEN_EFAULT;
    return mmuext_scratch(c, 1);
}

bool put_vcpumask(Cpu& c, uint64_t mask, Va& at)
{
    at = c.scratch_at(scratch::kMask);
    return c.mem.store(at, mask);
}

} // namespace pvmmu::guest
