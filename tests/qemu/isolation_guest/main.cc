// Two domains at once: the same guest kernel booted as
// domain 1 and domain 2 (tests/qemu/tests.cmake). The builder gives each a
// contiguous run of frames, domain 2's right after domain 1's (the QEMU test
// checks that from the hypervisor's lines), so the frame just past each
// end of a domain belongs to the other domain, to the hypervisor or to no
// one. Each domain tries to map those frames, to pin them as its L4, to make
// them its base and to write an entry of the other domain's L4 through
// mmu_update: every attempt must be refused with the core's errno, and then
// the domain powers off.
// Before that, both domains print kLines lines one byte per console_io call
// at the same time: the hypervisor buffers each vCPU's output a line at a
// time, so the QEMU test finds every line whole.
#include "tiny_guest.h"

using namespace tiny;

namespace {

constexpr uint64_t kP = 1, kRw = 2, kUs = 4;
constexpr int kLines = 30;

// mmuext_op with one operation naming a frame.
long mmuext1(unsigned cmd, uint64_t mfn)
{
    mmuext_op_t op{};
    op.cmd = cmd;
    op.arg1.mfn = mfn;
    return hypercall(__HYPERVISOR_mmuext_op, uint64_t(&op), 1, 0, DOMID_SELF);
}

long mmu1(uint64_t ptr, uint64_t val)
{
    mmu_update_t u{ptr, val};
    return hypercall(__HYPERVISOR_mmu_update, uint64_t(&u), 1, 0, DOMID_SELF);
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    const uint64_t* p2m = reinterpret_cast<const uint64_t*>(si->mfn_list);
    const uint64_t n = si->nr_pages, first = p2m[0], last = p2m[n - 1];
    // The physmap L1 entry of this domain's last gpfn (free: above the boot
    // structures), where the foreign frames are offered.
    const uint64_t first_l1 = si->nr_pt_frames - (n + 511) / 512;
    const uint64_t slot = (p2m[first_l1 + (n - 1) / 512] << 12) + ((n - 1) % 512) * 8;

    // "isolation guest: frames FIRST..LAST line L", a byte per console_io call.
    char line[80] = "isolation guest: frames ";
    int k = int(length(line));
    k += format_hex(line + k, first);
    line[k++] = '.', line[k++] = '.';
    k += format_hex(line + k, last);
    for (const char* w = " line "; *w; ++w) line[k++] = *w;
    for (int l = 0; l < kLines; ++l) {
        int e = k + format_hex(line + k, uint64_t(l));
        line[e++] = '\n';
        for (int i = 0; i < e; ++i)
            check("console_io of one byte", hypercall(__HYPERVISOR_console_io, CONSOLEIO_write, 1, uint64_t(line + i)),
                  0);
    }
    const uint64_t outside[] = {first - 1, last + 1};
    for (uint64_t mfn : outside) {
        check("map a frame outside the domain writable", mmu1(slot, (mfn << 12) | kP | kRw | kUs), -XEN_EPERM);
        check("map a frame outside the domain read-only", mmu1(slot, (mfn << 12) | kP | kUs), -XEN_EPERM);
        check("update_va_mapping to a frame outside the domain",
              hypercall(__HYPERVISOR_update_va_mapping, si->pt_base + ((n - 1) << 12), (mfn << 12) | kP | kUs, 0),
              -XEN_EPERM);
        check("pin a frame outside the domain as an L4", mmuext1(MMUEXT_PIN_L4_TABLE, mfn), -XEN_EPERM);
        check("make a frame outside the domain the base", mmuext1(MMUEXT_NEW_BASEPTR, mfn), -XEN_EPERM);
        check("write an entry of a table outside the domain", mmu1(mfn << 12, (first << 12) | kP | kUs),
              -XEN_EINVAL);
    }
    check("own last frame still mapped to itself", mmu1(slot, (last << 12) | kP | kRw | kUs), 0);
    finish("isolation guest");
}
