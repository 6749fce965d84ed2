// The fuzzer's pickers; see decoder.h.
#include "decoder.h"

#include "core/events.h"

#include <atomic>
#include <cstring>

namespace pvmmu::fuzz {

using namespace pte_bit;

namespace {
constexpr uint64_t kLinkFlags = P | RW | US | A;
// mmu_update commands drawn most often (the rest: any of 0-7).
constexpr unsigned kHotCmds[] = {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE, MMU_FLAG_RANGE_UPDATE,
                                 MMU_ATOMIC_PT_UPDATE, MMU_MACHPHYS_UPDATE};
} // namespace

Decoder::Decoder(Input& in, Hypervisor& hv, const DomainLayout* lays, unsigned nr_doms, uint8_t* guest)
    : in_(in), hv_(hv), lays_(lays), nr_doms_(nr_doms), guest_(guest),
      recent_{lays[0].l4, lays[0].mfn(lays[0].first_l1), lays[0].mfn(lays[0].nr_pt_frames), lays[nr_doms - 1].l4}
{
}

template <class T>
T* Decoder::alloc(size_t n)
{
    const size_t bytes = n * sizeof(T), at = (bump_ + 15) & ~size_t(15);
    if (at + bytes > kGuestBytes) return nullptr;
    bump_ = at + bytes;
    return reinterpret_cast<T*>(guest_ + at);
}
// decoder_grant.cc's.
template uint64_t* Decoder::alloc<uint64_t>(size_t);

// A pointer argument: mostly `good`, sometimes null, unmapped, or the last
// bytes of guest memory (a copy that runs off its end).
uint64_t Decoder::ptr_arg(const void* good)
{
    switch (in_.u8() % 16) {
    case 0: return 0;
    case 1: return kBadPtr;
    case 2: return addr(guest_) + kGuestBytes - 8;
    case 3: return in_.u64();
    default: return addr(good);
    }
}

Mfn Decoder::remember(Mfn m)
{
    recent_[recent_next_++ % 4] = m;
    return m;
}

Mfn Decoder::frame()
{
    const DomainLayout& l = lay(me());
    switch (in_.u8() % 10) {
    case 0:
    case 1: return remember(l.mfn(in_.u8() % l.nr_frames));
    case 2: return remember(l.mfn(in_.u8() % l.nr_pt_frames));
    case 3: return remember(lay(other()).mfn(in_.u8() % lay(other()).nr_frames));
    case 4: return Mfn{in_.u8() % sim::Arena::kXenFrames};
    case 5: return Mfn{sim::Arena::kXenFrames + in_.u8() % sim::Arena::kIoFrames};
    case 6: {
        static constexpr uint64_t kEdges[] = {kMachineFrames - 1, kMachineFrames, kMachineFrames + 1,
                                              (1ull << 40) - 1, 1ull << 40, ~0ull >> 12, ~0ull};
        return Mfn{in_.pick(kEdges)};
    }
    case 7: return Mfn{in_.u64()};
    case 8: return remember(table_frame());
    default: return recent_[in_.u8() % 4];
    }
}

// The n-th frame typed as a page table (validated or not), or the L4.
Mfn Decoder::table_frame()
{
    unsigned want = in_.u8(), seen = 0;
    Mfn last = lay(me()).l4;
    for (unsigned pass = 0; pass < 2; ++pass)
        for (uint64_t i = kFirstDomFrame; i < kMachineFrames; ++i)
            if (is_table_type(hv_.frame(Mfn{i}).type()) && seen++ == want) return Mfn{i};
    return last;
}

unsigned Decoder::index()
{
    static constexpr unsigned kSpecial[] = {0, 1, 2, 255, 256, 270, 271, 272, 510, 511};
    const uint16_t k = in_.u16();
    return k & 0x8000 ? kSpecial[k % 10] : k % kEntriesPerTable;
}

uint64_t Decoder::flags()
{
    static constexpr uint64_t kCommon[] = {
        kLinkFlags, P | US | A, P | RW | US | A | D, P, P | RW, P | A | NX, kLinkFlags | NX, 0,
        RW | US | A, P | PCD, P | PS, P | G, P | PWT, kLinkFlags | (1ull << 52), P | (5ull << 59)};
    const uint8_t k = in_.u8();
    if (k < 200) return kCommon[k % 15];
    static constexpr uint64_t kHigh[] = {0, NX, 1ull << 52, 1ull << 58, 1ull << 59, 0xfff0000000000000ull};
    const uint64_t low = in_.u16() & 0xfffull;
    return low | in_.pick(kHigh);
}

uint64_t Decoder::flag_range_val()
{
    // The masks guests use, and (the last, 0) any mask at all: 24 bits packed.
    static constexpr uint64_t kMasks[] = {RW, P, NX, AD, US, RW | NX, P | RW, 0xfff, G, PCD, 0xfffull | NX, 0};
    static constexpr uint32_t kCounts[] = {0, 1, 2, 16, 511, 512, 513, 1023};
    uint64_t mask = in_.pick(kMasks);
    if (mask == 0) mask = abi::unpack_flags(in_.u32() & 0xffffff);
    const uint64_t bits = flags() & mask;
    const uint8_t c = in_.u8();
    const uint32_t count = c & 0x80 ? kCounts[c % 8] : in_.u16() % 1024;
    uint64_t v = abi::encode_flag_range(mask, bits, count);
    if (in_.u8() % 16 == 0) v |= 1ull << (58 + in_.u8() % 6);   // MBZ bits
    return v;
}

uint64_t Decoder::val(unsigned cmd)
{
    if (cmd == MMU_FLAG_RANGE_UPDATE && in_.u8() % 4) return flag_range_val();
    const DomainLayout& l = lay(me());
    switch (in_.u8() % 10) {
    case 0: return 0;
    case 1:
    case 2: return with_flags(frame());
    case 3:
    case 4: return with_flags(remember(l.mfn(in_.u8() % l.nr_frames)));
    case 5: return Pte::make(frame(), kLinkFlags).v;
    case 6: return in_.u64();
    case 7: return flag_range_val();
    case 8: return Pte::make(lay(other()).mfn(in_.u8() % lay(other()).nr_frames), P | US | A).v;
    default: return Pte::make(frame(), P | US | A).v;
    }
}

uint64_t Decoder::ptr(unsigned cmd)
{
    const DomainLayout& l = lay(me());
    uint64_t a;
    switch (in_.u8() % 8) {
    case 0:
    case 1:
    case 2: a = entry_maddr(frame()); break;
    case 3:
    case 4: a = l.pte_maddr(in_.u8() % l.nr_frames).v; break;
    case 5: a = lay(other()).pte_maddr(in_.u8() % lay(other()).nr_frames).v; break;
    case 6: a = entry_maddr(l.mfn(in_.u8() % 3)); break;   // L4, L3, L2
    default: a = in_.u64(); cmd = unsigned(a & PVMMU_MMU_CMD_MASK); break;
    }
    // A request on a frame of the caller's that is no page table stores its
    // value there, as Xen's mmu_update does: a guest write, which ends the
    // FIFO protocol on that frame (fifo_prepared).
    written(Mfn{a >> kPageShift});
    return (a & ~uint64_t(PVMMU_MMU_CMD_MASK)) | cmd;
}

uint64_t Decoder::va()
{
    const DomainLayout& l = lay(me());
    switch (in_.u8() % 8) {
    case 0:
    case 1:
    case 2:
    case 3: {
        const uint64_t page = l.va(in_.u8() % l.nr_frames).v;
        return page + (in_.u8() % 8 == 0 ? in_.u16() % 4096 : 0);
    }
    case 4: return in_.u64();
    case 5: return (1ull << 47) | in_.u32();   // not canonical
    case 6: return l.physmap.v + (uint64_t(in_.u32()) << 12);
    default: return 0xffff'8000'0000'0000ull + (uint64_t(in_.u16()) << 12);   // hypervisor half
    }
}

uint64_t Decoder::vcpumask_arg()
{
    static constexpr uint64_t kMasks[] = {1, 2, 3, 0, ~0ull, 1ull << 63, 4};
    uint64_t* m = alloc<uint64_t>(1);
    if (m) *m = in_.u8() % 8 == 0 ? in_.u64() : in_.pick(kMasks);
    return ptr_arg(m);
}

uint64_t Decoder::foreigndom()
{
    const uint8_t k = in_.u8();
    if (k < 160) return DOMID_SELF;
    switch (k % 8) {
    case 0: return kIds[me()];
    case 1: return kIds[other()];
    case 2: return DOMID_IO;
    case 3: return DOMID_XEN;
    case 4: return 3;   // no such domain
    case 5: return 0;
    case 6: return DOMID_IDLE;
    default: return in_.u64();
    }
}

uint64_t Decoder::pdone_arg(uint32_t preset)
{
    uint32_t* d = alloc<uint32_t>(1);
    if (d) *d = preset;
    return ptr_arg(d);
}

uint32_t Decoder::count_arg(uint32_t n)
{
    switch (in_.u8() % 12) {
    case 0: return 0;
    case 1: return n + in_.u8();
    case 2: return n | PVMMU_MMU_UPDATE_PREEMPTED;
    case 3: return in_.u32();
    default: return n;
    }
}

HypercallFrame Decoder::mmu_args(bool single)
{
    const uint32_t n = single ? 1 : 1 + in_.u8() % 8;
    mmu_update_t* reqs = alloc<mmu_update_t>(n);
    for (uint32_t i = 0; reqs && i < n; ++i) {
        const unsigned cmd = in_.u8() % 10 < 8 ? in_.pick(kHotCmds) : in_.u8() & 7;
        reqs[i].ptr = ptr(cmd);
        reqs[i].val = val(cmd);
    }
    if (single) return {__HYPERVISOR_mmu_update, {addr(reqs), 1, pdone_arg(0), foreigndom(), 0, 0}};
    const uint32_t count = count_arg(n);
    return {__HYPERVISOR_mmu_update, {ptr_arg(reqs), count, pdone_arg(in_.u8() % n), foreigndom(), 0, 0}};
}

void Decoder::ext_op(mmuext_op_t& o)
{
    static constexpr unsigned kCmds[] = {
        MMUEXT_PIN_L1_TABLE, MMUEXT_PIN_L2_TABLE, MMUEXT_PIN_L3_TABLE, MMUEXT_PIN_L4_TABLE, MMUEXT_UNPIN_TABLE,
        MMUEXT_NEW_BASEPTR, MMUEXT_TLB_FLUSH_LOCAL, MMUEXT_INVLPG_LOCAL, MMUEXT_TLB_FLUSH_MULTI,
        MMUEXT_INVLPG_MULTI, MMUEXT_TLB_FLUSH_ALL, MMUEXT_INVLPG_ALL, MMUEXT_NEW_USER_BASEPTR,
        MMUEXT_PIN_L1_TABLE, MMUEXT_UNPIN_TABLE, MMUEXT_SET_LDT, MMUEXT_FLUSH_CACHE, 14, 21};
    o = mmuext_op_t{};
    const uint8_t k = in_.u8();
    o.cmd = k < 240 ? in_.pick(kCmds) : in_.u32();
    const bool takes_mfn = o.cmd <= MMUEXT_NEW_BASEPTR || o.cmd == MMUEXT_NEW_USER_BASEPTR;
    if (in_.u8() % 16 == 0) o.arg1.linear_addr = in_.u64();
    else if (takes_mfn) o.arg1.mfn = o.cmd == MMUEXT_NEW_USER_BASEPTR && in_.u8() % 4 == 0 ? 0 : frame().v;
    else o.arg1.linear_addr = va();
    o.arg2.vcpumask.p = reinterpret_cast<void*>(uintptr_t(vcpumask_arg()));
}

HypercallFrame Decoder::ext_args(bool single)
{
    const uint32_t n = single ? 1 : 1 + in_.u8() % 8;
    mmuext_op_t* ops = alloc<mmuext_op_t>(n);
    for (uint32_t i = 0; ops && i < n; ++i) ext_op(ops[i]);
    if (single) return {__HYPERVISOR_mmuext_op, {addr(ops), 1, pdone_arg(0), DOMID_SELF, 0, 0}};
    const uint32_t count = count_arg(n);
    return {__HYPERVISOR_mmuext_op, {ptr_arg(ops), count, pdone_arg(in_.u8() % n), foreigndom(), 0, 0}};
}

HypercallFrame Decoder::uva_args()
{
    static constexpr uint64_t kTypes[] = {UVMF_NONE, UVMF_TLB_FLUSH, UVMF_INVLPG, UVMF_FLUSHTYPE_MASK};
    const uint64_t v = va(), value = val(MMU_NORMAL_PT_UPDATE);
    const uint64_t type = in_.pick(kTypes);
    uint64_t target;
    switch (in_.u8() % 4) {
    case 0: target = UVMF_LOCAL; break;
    case 1: target = UVMF_ALL; break;
    case 2: target = vcpumask_arg(); break;
    default: target = in_.u64() & ~UVMF_FLUSHTYPE_MASK;
    }
    return {__HYPERVISOR_update_va_mapping, {v, value, target | type, 0, 0, 0}};
}

HypercallFrame Decoder::xv_args()
{
    xen_feature_info_t* fi = alloc<xen_feature_info_t>(1);
    if (fi) *fi = xen_feature_info_t{unsigned(in_.u8() % 3), 0};
    const uint64_t cmd = in_.u8() % 8 == 0 ? in_.u64() : in_.u8() % 12;
    return {__HYPERVISOR_xen_version, {cmd, ptr_arg(fi), 0, 0, 0, 0}};
}

HypercallFrame Decoder::raw_args()
{
    HypercallFrame f{in_.u8() % 4 ? in_.u8() % 64 : in_.u64(), {}};
    // mmu_update's or a multicall's requests from raw words may store into
    // any frame of the caller's that is no page table (ptr): none is taken
    // as kept to the FIFO protocol from here on.
    if (f.op == __HYPERVISOR_mmu_update || f.op == __HYPERVISOR_multicall)
        for (Prepared& p : prepared_) p = Prepared::No;
    if (f.op == __HYPERVISOR_event_channel_op || f.op == __HYPERVISOR_set_timer_op ||
        f.op == __HYPERVISOR_vcpu_op || f.op == __HYPERVISOR_sched_op)
        return event_args(f.op);
    if (f.op == __HYPERVISOR_grant_table_op) return gnttab_args();
    uint64_t* area = alloc<uint64_t>(8);
    for (uint64_t& a : f.arg) a = in_.u8() % 2 ? in_.u64() : ptr_arg(area);
    return f;
}

// Mostly 0-3 (ports, vCPUs, VIRQs that exist), else up to 69 (past the first
// bucket of 64 ports and NR_VIRQS), else anything.
uint32_t Decoder::small()
{
    switch (in_.u8() % 4) {
    case 0: return in_.u8() % 70;
    case 1: return in_.u32();
    default: return in_.u8() % 4;
    }
}

uint16_t Decoder::domid()
{
    static constexpr uint16_t kChoices[] = {DOMID_SELF, kIds[0], kIds[1], 9};
    return kChoices[in_.u8() % 4];
}

HypercallFrame Decoder::event_args(uint64_t op)
{
    uint32_t* words = alloc<uint32_t>(8);
    for (unsigned i = 0; words && i < 8; ++i) words[i] = small();
    HypercallFrame f{op, {}};
    switch (op) {
    case __HYPERVISOR_event_channel_op: {
        const uint32_t cmd = in_.u8() % 16;
        // The sub-ops whose struct starts with a domid_t (two for alloc_unbound).
        if (words && (cmd == EVTCHNOP_alloc_unbound || cmd == EVTCHNOP_status || cmd == EVTCHNOP_reset ||
                      cmd == EVTCHNOP_bind_interdomain))
            words[0] = domid() | uint32_t(domid()) << 16;
        if (words) fifo_frames(cmd, words);
        f.arg[0] = cmd;
        f.arg[1] = ptr_arg(words);
        break;
    }
    case __HYPERVISOR_set_timer_op:
        f.arg[0] = in_.u8() % 2 ? uint64_t(in_.u8()) * 1'000'000 : in_.u64();
        break;
    case __HYPERVISOR_vcpu_op: {
        f.arg[0] = in_.u8() % 4 ? VCPUOP_set_periodic_timer + in_.u8() % 4 : in_.u8() % 16;
        f.arg[1] = in_.u8() % 3;
        auto* t = reinterpret_cast<uint64_t*>(words);
        if (t) t[0] = in_.u8() % 2 ? uint64_t(in_.u8()) * 1'000'000 : in_.u64();
        f.arg[2] = ptr_arg(words);
        break;
    }
    default: {   // sched_op: yield, block, poll and the rest
        f.arg[0] = in_.u8() % 5;
        sched_poll_t* p = alloc<sched_poll_t>(1);
        if (p) {
            set_xen_guest_handle(p->ports, reinterpret_cast<evtchn_port_t*>(uintptr_t(ptr_arg(words))));
            p->nr_ports = in_.u8() % 4 ? in_.u8() % 5 : in_.u32();
            p->timeout = in_.u8() % 2 ? 0 : uint64_t(in_.u8()) * 1'000'000;
        }
        f.arg[1] = ptr_arg(p);
    }
    }
    return f;
}

// The FIFO ABI's frames (evtchn_init_control, evtchn_expand_array: the gfn
// first, a PV guest's gfn being the mfn): one of the decoder's frames; a
// control block's offset mostly 0, else one near the page's end or anything.
// A frame the caller may write is prepared as Linux prepares it, unless it
// serves the FIFO ABI already.
void Decoder::fifo_frames(uint32_t cmd, uint32_t* words)
{
    if (cmd != EVTCHNOP_init_control && cmd != EVTCHNOP_expand_array) return;
    const Mfn m = frame();
    std::memcpy(words, &m.v, sizeof(m.v));
    uint32_t offset = 0;
    if (cmd == EVTCHNOP_init_control) {
        switch (in_.u8() % 4) {
        case 0: offset = uint32_t(kPageSize - sizeof(evtchn_fifo_control_block_t)) - 8 * (in_.u8() % 4); break;
        case 1: offset = in_.u32(); break;
        default: break;
        }
        words[2] = offset;
    }
    // An array page of masked events, as Linux's, or of unmasked ones (a
    // guest may unmask any event not pending).
    const event_word_t fill = cmd == EVTCHNOP_expand_array && in_.u8() % 2 ? 0 : kFifoMasked;
    prepare(m, offset, cmd == EVTCHNOP_expand_array, fill);
}

// Whether m is a control block or an event array page of the caller's now.
bool Decoder::fifo_uses(Mfn m) const
{
    const Domain* d = hv_.domain(kIds[me()]);
    if (!d || !d->events) return false;
    const FifoEvents& f = d->events->fifo;
    for (const FifoVcpu& v : f.vcpu)
        if (v.block && v.block_mfn == m) return true;
    const unsigned n = f.nr_pages.load(std::memory_order_relaxed);
    for (unsigned i = 0; i < n; ++i)
        if (f.page_mfn[i] == m) return true;
    return false;
}

void Decoder::prepare(Mfn m, uint32_t offset, bool array, event_word_t fill)
{
    if (!guest_writable(m) || fifo_uses(m)) return;
    if (!array && offset > kPageSize - sizeof(evtchn_fifo_control_block_t)) return;
    auto* words = reinterpret_cast<uint32_t*>(hv_.mem().frame(m));
    if (array) {
        for (unsigned i = 0; i < kPageSize / sizeof(uint32_t); ++i)
            std::atomic_ref<uint32_t>(words[i]).store(fill, std::memory_order_relaxed);
    } else {
        for (unsigned i = 0; i < sizeof(evtchn_fifo_control_block_t) / sizeof(uint32_t); ++i)
            std::atomic_ref<uint32_t>(words[offset / sizeof(uint32_t) + i]).store(0, std::memory_order_relaxed);
    }
    prepared_[m.v] = array ? Prepared::Array : Prepared::Block;
}

HypercallFrame Decoder::multicall_args(unsigned depth)
{
    const uint32_t n = 1 + in_.u8() % 6;
    multicall_entry_t* list = alloc<multicall_entry_t>(n);
    for (uint32_t i = 0; list && i < n; ++i) {
        HypercallFrame f;
        switch (in_.u8() % 8) {
        case 0: f = mmu_args(true); break;
        case 1: f = mmu_args(false); break;
        case 2: f = ext_args(in_.u8() & 1); break;
        case 3: f = uva_args(); break;
        case 4: f = xv_args(); break;
        case 5: f = depth < 2 ? multicall_args(depth + 1) : raw_args(); break;
        case 6: f = raw_args(); break;
        default: f = {__HYPERVISOR_multicall, {addr(list), n, 0, 0, 0, 0}};   // itself
        }
        list[i] = multicall_entry_t{};
        list[i].op = f.op;
        for (unsigned k = 0; k < 6; ++k) list[i].args[k] = f.arg[k];
    }
    return {__HYPERVISOR_multicall, {ptr_arg(list), count_arg(n) & ~PVMMU_MMU_UPDATE_PREEMPTED, 0, 0, 0, 0}};
}

// Frames the caller may write: its own, not in use as a page table (a guest
// maps only those writable; the checker proves no table is mapped writable),
// and not its grant table (whose entries grant_write writes).
bool Decoder::guest_writable(Mfn m)
{
    if (!hv_.mem().valid(m) || hv_.frame(m).owner.load() != kIds[me()]) return false;
    if (grant_frame(m)) return false;   // written entry by entry (grant_write)
    const uint64_t x = hv_.frame(m).type_info.load();
    return !(is_table_type(ti::type(x)) && ti::count(x));
}

void Decoder::guest_write()
{
    const Mfn m = frame();
    if (grant_frame(m)) return grant_write(m);
    const unsigned n = 1 + in_.u8() % 4;
    for (unsigned i = 0; i < n; ++i) {
        const unsigned at = index();
        const uint64_t v = val(MMU_NORMAL_PT_UPDATE);
        if (guest_writable(m)) {
            std::atomic_ref<uint64_t>(hv_.mem().table(m)[at]).store(v, std::memory_order_relaxed);
            prepared_[m.v] = Prepared::No;
        }
    }
}

void Decoder::guest_copy()
{
    const Mfn to = frame(), from = frame();
    const bool zero = in_.u8() & 1;
    if (!guest_writable(to) || (!zero && !hv_.mem().valid(from))) return;
    if (!zero && hv_.frame(from).owner.load() != kIds[me()]) return;   // it can read only its own
    prepared_[to.v] = Prepared::No;
    uint64_t* t = hv_.mem().table(to);
    const uint64_t* f = zero ? nullptr : hv_.mem().table(from);
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        const uint64_t v = f ? std::atomic_ref<const uint64_t>(f[i]).load(std::memory_order_relaxed) : 0;
        std::atomic_ref<uint64_t>(t[i]).store(v, std::memory_order_relaxed);
    }
}

} // namespace pvmmu::fuzz
