// The loader tests: a kernel linked at virtual address
// 0 without ENTRY, VIRT_BASE or PADDR_OFFSET notes and with a FEATURES note
// in Xen's syntax (low-guest), and the same kernel described by the legacy
// `__xen_guest` section instead of notes (legacy-guest). Each checks what it
// can see of the start of day as <xen/xen.h> describes it ("the layout of
// the start-of-day memory"): start_info valid and after the image, then the
// P2M list, the page tables and the stack, all after the image; its pages 0
// and 1 hold the image's bytes (the builder wrote nothing there); page 0
// can be unmapped, as such kernels do to catch NULL. The same kernels run on
// pvmmu (qemu_guest_low, qemu_guest_legacy) and on Xen 4.17
// (xen_low_guest, xen_legacy_guest).
#include "tiny_guest.h"

using namespace tiny;

extern "C" char low_page0[4096], low_page1[4096], __image_end[];

namespace {

#ifdef LEGACY
constexpr const char* kWho = "legacy guest";
#else
constexpr const char* kWho = "low guest";
#endif

void line(const char* what, uint64_t v)
{
    write(kWho);
    write(": ");
    write(what);
    write(" ");
    write_hex(v);
    write("\n");
}

bool filled(const char* p, char byte)
{
    for (unsigned i = 0; i < 4096; ++i)
        if (p[i] != byte) return false;
    return true;
}

} // namespace

extern "C" [[noreturn]] void low_main(const start_info_t* si, uint64_t sp)
{
    const uint64_t end = uint64_t(__image_end), s = uint64_t(si);
    check("console_io write", write(kWho) + write(": running\n"), 0);
    line("image 0 to", end);
    line("start_info at", s);
    line("P2M list at", si->mfn_list);
    line("page tables at", si->pt_base);
    line("stack pointer", sp);
    const char kMagic[] = "xen-3.0-x86_64";
    bool magic = true;
    for (unsigned i = 0; i < sizeof(kMagic); ++i) magic &= si->magic[i] == kMagic[i];
    check("start_info magic xen-3.0-x86_64", magic, 1);
    check("entered at e_entry, linked at 0: start_info after the image", s >= end, 1);
    check("  page aligned", s & 4095, 0);
    check("the P2M list after the image", si->mfn_list >= end, 1);
    check("the page tables after the image", si->pt_base >= end && si->nr_pt_frames > 0, 1);
    check("  page aligned", si->pt_base & 4095, 0);
    check("the stack after the tables", sp >= si->pt_base + (si->nr_pt_frames << 12), 1);
    check("nr_pages covers the boot structures", (si->nr_pages << 12) >= sp, 1);
    // The L4 is mapped (read-only) at pt_base: its entry 0 maps this kernel.
    const uint64_t l4e0 = *reinterpret_cast<const volatile uint64_t*>(si->pt_base);
    check("the L4's entry 0 is present", long(l4e0 & 1), 1);
    check("page 0 holds the image's bytes", filled(low_page0, 0x5a), 1);
    check("page 1 holds the image's bytes", filled(low_page1, char(0xa5)), 1);
    check("XENVER_version", hypercall(__HYPERVISOR_xen_version, XENVER_version) > 0, 1);
    check("page 0 unmapped", hypercall(__HYPERVISOR_update_va_mapping, 0, 0, UVMF_INVLPG | UVMF_LOCAL), 0);
    write(g_failed ? "Test result: FAILURE\n" : "Test result: SUCCESS\n");
    finish(kWho);
}
