// The initial module (xl.cfg's `ramdisk`) where start_info says it is
// (<xen/xen.h>: mod_start, mod_len, SIF_MOD_START_PFN; the start-of-day
// layout puts the "initial ram disk" after the kernel image, before the P2M
// list). The module is the file tests/qemu/tests.cmake writes: kModuleLen
// bytes of kPattern repeated. module-guest has no XEN_ELFNOTE_MOD_START_PFN
// note: mod_start is a virtual address, the flag clear. module-pfn-guest
// declares the note: mod_start is the module's page frame number, the flag
// set, and the bytes are at virt_base + pfn * 4 KiB (every frame of a pvmmu
// domain is mapped). Both check the bytes, the zeroes after them to the end
// of the page, and the order image < module < P2M list < start_info.
#include "tiny_guest.h"

using namespace tiny;

#ifdef MODULE_PFN
// XEN_ELFNOTE_MOD_START_PFN (16) = 1: this kernel takes a PFN in mod_start.
asm(".pushsection .note.Xen, \"a\", @note\n"
    ".balign 4\n.long 4\n.long 4\n.long 16\n.asciz \"Xen\"\n.long 1\n"
    ".popsection\n");
constexpr const char* kWho = "module pfn guest";
#else
constexpr const char* kWho = "module guest";
#endif

extern "C" char __image_end[];

namespace {

constexpr char kPattern[] = "pvmmu initial module\n";   // 21 bytes, so no page holds a whole number
constexpr uint64_t kModuleLen = 10000;

void line(const char* what, uint64_t v)
{
    write(kWho);
    write(": ");
    write(what);
    write(" ");
    write_hex(v);
    write("\n");
}

} // namespace

extern "C" [[noreturn]] void xenpv_start(const start_info_t* si)
{
    const uint64_t image_end = uint64_t(__image_end), si_va = uint64_t(si);
    // The physmap's base: start_info is the guest's own page, pt_base the L4.
    line("mod_start", si->mod_start);
    line("mod_len", si->mod_len);
    line("flags", si->flags);
    const bool pfn = (si->flags & SIF_MOD_START_PFN) != 0;
#ifdef MODULE_PFN
    check("SIF_MOD_START_PFN set for a kernel with XEN_ELFNOTE_MOD_START_PFN", pfn, 1);
    const uint64_t at = XENPV_VIRT_BASE + (si->mod_start << 12);
#else
    check("SIF_MOD_START_PFN clear for a kernel without XEN_ELFNOTE_MOD_START_PFN", pfn, 0);
    const uint64_t at = si->mod_start;
#endif
    check("mod_len is the file's size", long(si->mod_len), long(kModuleLen));
    check("the module is page aligned", long(at & 4095), 0);
    check("the module after the image", at >= image_end, 1);
    check("the P2M list after the module", si->mfn_list >= at + kModuleLen, 1);
    check("start_info after the P2M list", si_va > si->mfn_list, 1);
    if (si->mod_len == kModuleLen && at >= image_end && si->mfn_list >= at + kModuleLen) {
        const volatile char* m = reinterpret_cast<const volatile char*>(at);
        unsigned bad = 0;
        for (uint64_t i = 0; i < kModuleLen; ++i) bad += m[i] != kPattern[i % (sizeof(kPattern) - 1)];
        check("the module's bytes are the file's", bad, 0);
        unsigned nonzero = 0;
        for (uint64_t i = kModuleLen; i < ((kModuleLen + 4095) & ~4095ull); ++i) nonzero += m[i] != 0;
        check("zeroes after it to the end of its page", nonzero, 0);
    }
    write(g_failed ? "Test result: FAILURE\n" : "Test result: SUCCESS\n");
    finish(kWho);
}
