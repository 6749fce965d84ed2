// The hostile guest's grant_table_op (docs/abi.md §12.7, docs/security.md
// §7.18): every sub-op, and numbers past them, with random and boundary
// arguments, none of which may change what the guest's model relies on.
// The guest never writes its own grant table (it never maps its frames),
// so every entry stays zero: every map, and every copy of a gref, is refused
// at its pin, and no handle is ever live (an unmap, unmap_and_replace is
// refused before it looks at an address). A copy's destination is always a
// gref, so no byte of the guest's memory is copied over. setup_table grows
// the table (frames the domain owns outside its P2M, which nothing here
// draws), its frame list written into pool A. Each array is one the guest
// fills now in pool A, or a pointer the hypervisor must refuse.
#include "hostile.h"

#include <xen/grant_table.h>

namespace hostile {

namespace {

constexpr uint64_t kSubOps = 13;   // GNTTABOP_map_grant_ref .. GNTTABOP_cache_flush

uint64_t element_size(uint64_t cmd)
{
    static constexpr uint64_t kSize[kSubOps] = {
        sizeof(gnttab_map_grant_ref_t),       sizeof(gnttab_unmap_grant_ref_t), sizeof(gnttab_setup_table_t),
        sizeof(gnttab_dump_table_t),          sizeof(gnttab_transfer_t),        sizeof(gnttab_copy_t),
        sizeof(gnttab_query_size_t),          sizeof(gnttab_unmap_and_replace_t), sizeof(gnttab_set_version_t),
        sizeof(gnttab_get_status_frames_t),   sizeof(gnttab_get_version_t),     sizeof(gnttab_swap_grant_ref_t),
        sizeof(gnttab_cache_flush_t)};
    return cmd < kSubOps ? kSize[cmd] : 64;
}

// The sub-ops whose `count` is a batch; the others take exactly 1.
bool batch(uint64_t cmd)
{
    return cmd == GNTTABOP_map_grant_ref || cmd == GNTTABOP_unmap_grant_ref || cmd == GNTTABOP_copy ||
           cmd == GNTTABOP_unmap_and_replace || cmd == GNTTABOP_swap_grant_ref || cmd == GNTTABOP_transfer ||
           cmd == GNTTABOP_cache_flush;
}

domid_t pick_domid()
{
    return domid_t(rng.of({uint64_t(DOMID_SELF), 0ull, 1ull, 2ull, uint64_t(g.facts.peer_domid), uint64_t(DOMID_XEN),
                           uint64_t(DOMID_IO), rng.below(1ull << 16)}));
}

grant_ref_t pick_ref() { return grant_ref_t(rng.of({0ull, 1ull, 511ull, 512ull, 32767ull, 32768ull, rng.next()})); }

// Array room for a frame list of n entries: pool A, or a pointer to refuse.
uint64_t frame_list(uint64_t n)
{
    const uint64_t p = alloc_a(n * sizeof(xen_pfn_t) + 8);
    return p && !rng.one_in(6) ? p : pick_pointer(n * sizeof(xen_pfn_t));
}

void fill_copy_ptr(gnttab_copy::gnttab_copy_ptr& e, bool gref)
{
    if (gref) e.u.ref = pick_ref();
    else e.u.gmfn = rng.below(2) ? g.mfn(rng.below(g.nr_pages)) : rng.next();
    e.domid = pick_domid();
    e.offset = uint16_t(rng.of({0ull, 1ull, 4095ull, 4096ull, rng.below(1ull << 16)}));
}

void fill(uint64_t cmd, uint8_t* p)
{
    switch (cmd) {
    case GNTTABOP_map_grant_ref: {
        auto& o = *reinterpret_cast<gnttab_map_grant_ref_t*>(p);
        o.host_addr = rng.below(4) ? pick_any_va() : rng.next();
        o.flags = uint32_t(rng.below(3) ? GNTMAP_host_map | rng.below(1u << 8) : rng.next());
        o.ref = pick_ref();
        o.dom = pick_domid();
        break;
    }
    case GNTTABOP_unmap_grant_ref: {
        auto& o = *reinterpret_cast<gnttab_unmap_grant_ref_t*>(p);
        o.host_addr = rng.below(4) ? pick_any_va() : 0;
        o.dev_bus_addr = rng.one_in(4) ? rng.next() : 0;
        o.handle = grant_handle_t(rng.below(2) ? rng.below(300) : rng.next());
        break;
    }
    case GNTTABOP_unmap_and_replace: {
        auto& o = *reinterpret_cast<gnttab_unmap_and_replace_t*>(p);
        o.host_addr = pick_any_va();
        o.new_addr = pick_any_va();
        o.handle = grant_handle_t(rng.below(2) ? rng.below(300) : rng.next());
        break;
    }
    case GNTTABOP_setup_table: {
        auto& o = *reinterpret_cast<gnttab_setup_table_t*>(p);
        o.dom = rng.below(3) ? domid_t(DOMID_SELF) : pick_domid();
        o.nr_frames = uint32_t(rng.of({0ull, 1ull, 2ull, 4ull, 64ull, 65ull, rng.next()}));
        set_xen_guest_handle(o.frame_list, reinterpret_cast<xen_pfn_t*>(frame_list(o.nr_frames < 64 ? o.nr_frames : 64)));
        break;
    }
    case GNTTABOP_get_status_frames: {
        auto& o = *reinterpret_cast<gnttab_get_status_frames_t*>(p);
        o.dom = pick_domid();
        o.nr_frames = uint32_t(rng.of({0ull, 1ull, 2ull, rng.next()}));
        set_xen_guest_handle(o.frame_list, reinterpret_cast<uint64_t*>(frame_list(2)));
        break;
    }
    case GNTTABOP_copy: {
        auto& o = *reinterpret_cast<gnttab_copy_t*>(p);
        const bool src_gref = rng.below(2);
        // The destination a gref, always: the guest's memory is never written.
        o.flags = uint16_t((src_gref ? GNTCOPY_source_gref : 0) | GNTCOPY_dest_gref | (rng.one_in(8) ? rng.below(1u << 16) : 0));
        fill_copy_ptr(o.source, src_gref);
        fill_copy_ptr(o.dest, true);
        o.len = uint16_t(rng.of({0ull, 1ull, 8ull, 4096ull, 4097ull, rng.below(1ull << 16)}));
        break;
    }
    case GNTTABOP_query_size:
        reinterpret_cast<gnttab_query_size_t*>(p)->dom = pick_domid();
        break;
    case GNTTABOP_set_version:
        reinterpret_cast<gnttab_set_version_t*>(p)->version = uint32_t(rng.of({0ull, 1ull, 1ull, 2ull, 3ull, rng.next()}));
        break;
    case GNTTABOP_get_version:
        reinterpret_cast<gnttab_get_version_t*>(p)->dom = pick_domid();
        break;
    case GNTTABOP_swap_grant_ref: {
        auto& o = *reinterpret_cast<gnttab_swap_grant_ref_t*>(p);
        o.ref_a = pick_ref();
        o.ref_b = rng.below(4) ? pick_ref() : o.ref_a;
        break;
    }
    default:   // dump_table, transfer, cache_flush and unknown: random bytes
        for (uint64_t i = 0; i < element_size(cmd); ++i) p[i] = uint8_t(rng.next());
    }
}

} // namespace

Call make_grant_call()
{
    uint64_t cmd = rng.below(kSubOps);
    if (rng.one_in(12)) cmd = rng.of({kSubOps, 31ull, 1ull << 12, 1ull << 31, rng.next()});
    const uint64_t elem = element_size(cmd), n = batch(cmd) ? 1 + rng.below(4) : 1;
    uint64_t list;
    const uint64_t p = list_or_bad(n * elem, list);
    if (list)
        for (uint64_t i = 0; i < n; ++i) {
            for (uint64_t b = 0; b < elem; ++b) reinterpret_cast<uint8_t*>(list)[i * elem + b] = 0;
            fill(cmd, reinterpret_cast<uint8_t*>(list + i * elem));
        }
    const uint64_t count = batch(cmd) || rng.one_in(8) ? pick_count(n, list, elem) : 1;
    Call c{__HYPERVISOR_grant_table_op, {cmd, p, count}};
    c.name = "grant_table_op";
    return c;
}

} // namespace hostile
