// Domain builder; see core/domain_builder.h.
#include "core/domain_builder.h"

#include <string.h>

#include <pvmmu/abi.h>

#include "core/range.h"
#include "core/refs.h"

namespace pvmmu {

namespace {

constexpr uint64_t kTableFlags = pte_bit::P | pte_bit::RW | pte_bit::US | pte_bit::A;


} // namespace

int build_domain(Hypervisor& hv, Domain& d, const DomainSpec& spec, DomainLayout& out)
{
    const uint64_t n = spec.nr_frames;
    const uint64_t nl1 = ceil_div(n, kEntriesPerTable), nl2 = ceil_div(nl1, kEntriesPerTable);
    const uint64_t npt = builder_table_frames(n), pt = spec.first_pt;
    // The physmap starts at an L3 entry (1 GiB aligned: a Linux kernel's
    // VIRT_BASE, 0xffffffff80000000, is L3 entry 510 of slot 511), and its
    // L2s must fit the one L3 that slot gets.
    const unsigned slot = table_index(spec.physmap, Level::L4), l3i = table_index(spec.physmap, Level::L3);
    if (spec.nr_vcpus == 0 || spec.nr_vcpus > kMaxVcpus || !range_within(spec.first_cpu, spec.nr_vcpus, 0, kMaxCpus) ||
        n <= npt || pt > n - npt || nl2 > kEntriesPerTable - l3i || (spec.physmap.v & ((1ull << 30) - 1)) ||
        !canonical(spec.physmap) || hv.l4_slot_reserved(slot) || !range_within(spec.first.v, n, 0, hv.mem().nr_frames))
        return -XEN_EINVAL;
    for (uint64_t i = 0; i < n; ++i) {
        const FrameInfo& f = hv.frame(Mfn{spec.first.v + i});
        if (f.owner.load() != kOwnerFree || f.count.load() != 0 || f.type_count() != 0) return -XEN_EBUSY;
    }

    d.id = spec.id;
    d.nr_vcpus = spec.nr_vcpus;
    d.nr_frames = n;
    if (!hv.add_domain(d)) return -XEN_EBUSY;

    out = DomainLayout{spec.physmap, spec.first, n, npt, Mfn{spec.first.v + pt}, pt + 2 + nl2, pt};
    for (uint64_t i = 0; i < n; ++i) {
        const Mfn m = out.mfn(i);
        memset(hv.mem().frame(m), 0, kPageSize);
        hv.m2p(m) = i;
        hv.frame(m).owner.store(spec.id, std::memory_order_release);
    }

    // gpfn pt: L4, pt + 1: L3, then the L2s, then the L1s.
    const uint64_t l2_base = pt + 2, l1_base = pt + 2 + nl2;
    hv.mem().table(out.mfn(pt))[slot] = Pte::make(out.mfn(pt + 1), kTableFlags).v;
    for (uint64_t j = 0; j < nl2; ++j)
        hv.mem().table(out.mfn(pt + 1))[l3i + j] = Pte::make(out.mfn(l2_base + j), kTableFlags).v;
    for (uint64_t k = 0; k < nl1; ++k)
        hv.mem().table(out.mfn(l2_base + k / kEntriesPerTable))[k % kEntriesPerTable] =
            Pte::make(out.mfn(l1_base + k), kTableFlags).v;
    for (uint64_t i = 0; i < n; ++i) {
        const uint64_t rw = i >= pt && i - pt < npt ? 0 : pte_bit::RW;   // page tables are read-only to guests
        hv.mem().table(out.mfn(l1_base + i / kEntriesPerTable))[i % kEntriesPerTable] =
            Pte::make(out.mfn(i), pte_bit::P | pte_bit::US | pte_bit::A | rw).v;
    }

    // Pin and install through the normal paths: validation checks the builder too.
    if (int rc = get_page_and_type(hv, out.l4, d.id, PageType::L4)) return rc;
    hv.frame(out.l4).type_info.fetch_or(ti::kPinned, std::memory_order_acq_rel);
    for (unsigned i = 0; i < d.nr_vcpus; ++i) {
        Vcpu& v = d.vcpus[i];
        v.cpu = spec.first_cpu + i;
        if (int rc = get_page_and_type(hv, out.l4, d.id, PageType::L4)) return rc;
        v.guest_table = out.l4;
        v.has_table = true;
        v.online = true;
        hv.cpu_online(v.cpu);
    }
    return 0;
}

} // namespace pvmmu
