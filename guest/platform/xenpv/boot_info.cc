// start_info (xen/xen.h) as the guest library's BootInfo, and its command
// line as the runtime's argument words.
#include "xenpv.h"

namespace pvmmu::guest::xenpv {

const start_info_t* g_si;
BootInfo g_boot;

// start_info as the library's BootInfo. Both hypervisors map gpfn g at
// VIRT_BASE + g * 4 KiB, the L4 at pt_base first of the builder's tables;
// pvmmu maps every gpfn and gives contiguous frames, Xen maps its boot region
// only and gives frames from anywhere (the library maps the rest, and
// inverts the P2M with the M2P Xen maps read-only for every PV guest).
BootInfo boot_info(const start_info_t& si, uint64_t initial_sp)
{
    const uint64_t physmap = XENPV_VIRT_BASE;
    xen_machphys_mapping_t m2p{};
    const bool have_m2p = hypercall(__HYPERVISOR_memory_op, XENMEM_machphys_mapping, uint64_t(&m2p)) == 0;
    return BootInfo{
        .physmap = Va{physmap},
        .p2m = reinterpret_cast<const uint64_t*>(si.mfn_list),
        .m2p = have_m2p ? reinterpret_cast<const uint64_t*>(m2p.v_start) : nullptr,
        .m2p_entries = have_m2p ? m2p.max_mfn + 1 : 0,
        .nr_frames = si.nr_pages,
        .l4 = Gpfn{(si.pt_base - physmap) >> kPageShift},
        .first_pt = (si.pt_base - physmap) >> kPageShift,
        .nr_pt_frames = si.nr_pt_frames,
        .first_free = (initial_sp - physmap) >> kPageShift,
        .nr_vcpus = 1,
        .tlb_caches_invalid = false,   // x86 TLBs hold no not-present translation
        .coherent_walker = true,
    };
}

} // namespace pvmmu::guest::xenpv

using namespace pvmmu::guest::xenpv;

namespace pvmmu::guest::rt {

// The words of start_info's command line (`key=value …`), split once.
const char* platform_arg(unsigned i)
{
    static char line[MAX_GUEST_CMDLINE];
    static const char* words[MAX_GUEST_CMDLINE / 2];
    static unsigned nr_words = ~0u;
    if (nr_words == ~0u) {
        nr_words = 0;
        for (unsigned k = 0; k + 1 < MAX_GUEST_CMDLINE && g_si->cmd_line[k]; ++k) line[k] = char(g_si->cmd_line[k]);
        for (unsigned k = 0; line[k]; ++k) {
            if (line[k] == ' ') line[k] = 0;
            else if (k == 0 || line[k - 1] == 0) words[nr_words++] = &line[k];
        }
    }
    return i < nr_words ? words[i] : nullptr;
}

} // namespace pvmmu::guest::rt
