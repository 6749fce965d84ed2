// The fuzzer's pickers for grant tables (decoder.h): grant_table_op's
// sub-ops with arguments biased toward the grants the domains offer each
// other (small references, the domains' own addresses and entries), and the
// granter's own writes to its grant entries, made as a guest that follows
// <xen/grant_table.h> makes them: an entry in use (GTF_reading or
// GTF_writing) is left alone, a free one is offered (frame and domid, then
// the flags) or revoked by a compare-exchange. The invariant checker holds
// the hypervisor to GTF_reading / GTF_writing exactly while a pin lives,
// which a guest scribbling over its own entries in use could break at will.
#include <atomic>

#include "core/grant_table.h"
#include "decoder.h"

namespace pvmmu::fuzz {

namespace {
// grant_table_op's sub-ops drawn most often (the rest: any of 0-15).
constexpr uint32_t kHotGntCmds[] = {GNTTABOP_map_grant_ref,    GNTTABOP_map_grant_ref, GNTTABOP_unmap_grant_ref,
                                    GNTTABOP_unmap_grant_ref,  GNTTABOP_copy,          GNTTABOP_copy,
                                    GNTTABOP_unmap_and_replace, GNTTABOP_setup_table,  GNTTABOP_query_size,
                                    GNTTABOP_set_version,      GNTTABOP_get_version,   GNTTABOP_get_status_frames,
                                    GNTTABOP_swap_grant_ref,   GNTTABOP_transfer};
constexpr uint32_t kMapFlags[] = {GNTMAP_host_map,
                                  GNTMAP_host_map | GNTMAP_readonly,
                                  GNTMAP_host_map | GNTMAP_contains_pte,
                                  GNTMAP_host_map | GNTMAP_contains_pte | GNTMAP_readonly,
                                  GNTMAP_host_map | GNTMAP_application_map | (3u << _GNTMAP_guest_avail0),
                                  GNTMAP_device_map,
                                  0};
} // namespace

grant_ref_t Decoder::gref()
{
    switch (in_.u8() % 8) {
    case 0: return in_.u8() % 2 ? gnt::kEntriesPerFrame - 1 + in_.u8() % 2 : in_.u32();
    default: return in_.u8() % 8;
    }
}

// A map's or unmap's host address, as its flags read it: an address of the
// caller's physmap, the machine address of the entry that maps one, or not.
uint64_t Decoder::grant_host_addr(uint32_t map_flags)
{
    const DomainLayout& l = lay(me());
    const uint64_t g = in_.u8() % l.nr_frames;
    switch (in_.u8() % 8) {
    case 0: return in_.u64();
    case 1: return 0;
    default: return (map_flags & GNTMAP_contains_pte) ? l.pte_maddr(g).v : l.va(g).v;
    }
}

void Decoder::copy_ptr(gnttab_copy_t::gnttab_copy_ptr& p, bool by_gref)
{
    if (by_gref) {
        p.u.ref = gref();
        p.domid = domid();
    } else {
        p.u.gmfn = frame().v;
        p.domid = in_.u8() % 8 ? DOMID_SELF : domid();
    }
    p.offset = uint16_t(in_.u8() % 4 ? (in_.u8() % 3) * 2040 : in_.u16());
}

HypercallFrame Decoder::gnttab_args()
{
    const uint32_t cmd = in_.u8() % 8 ? in_.pick(kHotGntCmds) : in_.u8() % 16;
    const uint32_t n = in_.u8() % 4 ? 1 : 1 + in_.u8() % 4;
    // The largest request is a copy's (40 bytes); one area serves any sub-op.
    uint8_t* area = reinterpret_cast<uint8_t*>(alloc<uint64_t>(8 * n));
    auto* list = alloc<xen_pfn_t>(2);
    for (uint32_t i = 0; area && i < n; ++i) {
        uint8_t* at = area + 64 * i;
        switch (cmd) {
        case GNTTABOP_map_grant_ref: {
            auto* op = reinterpret_cast<gnttab_map_grant_ref_t*>(at);
            *op = {};
            op->flags = in_.u8() % 8 ? in_.pick(kMapFlags) : in_.u32();
            op->host_addr = grant_host_addr(op->flags);
            op->ref = gref();
            op->dom = domid();
            break;
        }
        case GNTTABOP_unmap_grant_ref:
        case GNTTABOP_unmap_and_replace: {
            // Both start with host_addr; the handle sits where each puts it.
            const bool pte = in_.u8() % 2;
            const uint64_t host = grant_host_addr(pte ? GNTMAP_contains_pte : 0);
            const grant_handle_t h = in_.u8() % 8 ? in_.u8() % 9 : in_.u32();
            if (cmd == GNTTABOP_unmap_grant_ref) {
                auto* op = reinterpret_cast<gnttab_unmap_grant_ref_t*>(at);
                *op = {};
                op->host_addr = host;
                op->handle = h;
            } else {
                auto* op = reinterpret_cast<gnttab_unmap_and_replace_t*>(at);
                *op = {};
                op->host_addr = host;
                op->new_addr = grant_host_addr(0);
                op->handle = h;
            }
            break;
        }
        case GNTTABOP_copy: {
            auto* op = reinterpret_cast<gnttab_copy_t*>(at);
            *op = {};
            op->flags = uint16_t(in_.u8() % 8 ? in_.u8() % 4 : in_.u16());
            copy_ptr(op->source, op->flags & GNTCOPY_source_gref);
            copy_ptr(op->dest, op->flags & GNTCOPY_dest_gref);
            if (!(op->flags & GNTCOPY_dest_gref)) written(Mfn{op->dest.u.gmfn});   // a copy into its own frame
            op->len = uint16_t(in_.u8() % 4 ? in_.u8() * 17 : in_.u16());
            break;
        }
        case GNTTABOP_setup_table: {
            auto* op = reinterpret_cast<gnttab_setup_table_t*>(at);
            *op = {};
            op->dom = domid();
            op->nr_frames = in_.u8() % 4 ? in_.u8() % 3 : in_.u32();
            op->frame_list.p = reinterpret_cast<xen_pfn_t*>(uintptr_t(ptr_arg(list)));
            break;
        }
        case GNTTABOP_swap_grant_ref: {
            auto* op = reinterpret_cast<gnttab_swap_grant_ref_t*>(at);
            *op = {};
            op->ref_a = gref();
            op->ref_b = gref();
            break;
        }
        default: {
            // query_size, set_version, get_version, get_status_frames,
            // transfer and the unknown: a domid first, small words after.
            auto* w = reinterpret_cast<uint32_t*>(at);
            for (unsigned k = 0; k < 16; ++k) w[k] = small();
            if (cmd == GNTTABOP_set_version) w[0] = in_.u8() % 4;
            else if (cmd == GNTTABOP_get_status_frames) w[1] = domid();
            else w[0] = domid();
        }
        }
    }
    const uint32_t count = in_.u8() % 8 ? n : count_arg(n);
    return {__HYPERVISOR_grant_table_op, {cmd, ptr_arg(area), count, 0, 0, 0}};
}

bool Decoder::grant_frame(Mfn m) const
{
    const Domain* d = const_cast<Hypervisor&>(hv_).domain(kIds[me()]);
    if (!d || !d->grants) return false;
    for (uint32_t i = 0; i < d->grants->nr_frames(); ++i)
        if (d->grants->frame(i) == m) return true;
    return false;
}

void Decoder::grant_write(Mfn m)
{
    auto* entries = static_cast<grant_entry_v1_t*>(hv_.mem().frame(m));
    grant_entry_v1_t& e = entries[in_.u8() % 4 ? in_.u8() % 8 : in_.u16() % gnt::kEntriesPerFrame];
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(&e));
    uint32_t cur = word.load();
    if (cur & (GTF_reading | GTF_writing)) return;   // in use: the guest waits
    if (in_.u8() % 4 == 0) {
        (void)word.compare_exchange_strong(cur, 0);   // revoked
        return;
    }
    static constexpr uint16_t kFlags[] = {GTF_permit_access, GTF_permit_access, GTF_permit_access | GTF_readonly,
                                          GTF_accept_transfer, GTF_transitive, GTF_permit_access | GTF_sub_page};
    const uint16_t flags = in_.u8() % 8 ? in_.pick(kFlags) : uint16_t(in_.u16() & ~(GTF_reading | GTF_writing));
    const DomId to = domid();
    std::atomic_ref<uint32_t>(e.frame).store(uint32_t(frame().v));
    (void)word.compare_exchange_strong(cur, flags | uint32_t(to) << 16);
}

} // namespace pvmmu::fuzz
