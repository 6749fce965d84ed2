// The hypercall fuzzer's harness; see harness.h. The pickers draw every argument
// from the input, biased toward what reaches deep states — the domains' own
// tables and frames, the entries that map them, the flags guests really use,
// frames picked a moment ago (so "write it, pin it, link it, unlink it" chains
// form) — while still reaching every other value: foreign, hypervisor, I/O, free
// and nonexistent frames, reserved slots, bad pointers, huge counts, unknown
// commands. Guest memory is the FuzzPlatform's buffer; every pointer the fuzzer
// builds points into it, at its end, or nowhere.
#include "harness.h"

#include <cstdio>
#include <memory>
#include <sstream>
#include <vector>

#include <pvmmu/abi.h>

#include "ad_walker.h"
#include "core/domain_builder.h"
#include "core/hypercall.h"
#include "core/invariants.h"
#include "fuzz_platform.h"
#include "input.h"
#include "sim/arena.h"
#include "state.h"

namespace pvmmu::fuzz {
namespace {

using namespace pte_bit;

constexpr DomId kIds[2] = {1, 2};
constexpr uint64_t kDomFrames[2] = {24, 16};
constexpr uint64_t kSpareFrames = 4;   // free frames after the domains
constexpr uint64_t kFirstDomFrame = sim::Arena::kXenFrames + sim::Arena::kIoFrames;
constexpr uint64_t kMachineFrames = kFirstDomFrame + kDomFrames[0] + kDomFrames[1] + kSpareFrames;
constexpr size_t kGuestBytes = 16 * 1024;
constexpr uint64_t kBadPtr = 0x1000;          // never guest memory
constexpr uint64_t kMaxRounds = 1 << 20;      // a call still going after this many livelocks
constexpr uint64_t kLinkFlags = P | RW | US | A;

enum Op : uint8_t {
    MmuOne, MmuBatch, ExtOne, ExtBatch, UpdateVa, Multicall, XenVersion,
    GuestWrite, GuestCopy, RawCall, PolicyToggle, kNrOps
};
const char* const kOpNames[kNrOps] = {"mmu_update(1)", "mmu_update(n)", "mmuext_op(1)", "mmuext_op(n)",
                                      "update_va_mapping", "multicall", "xen_version", "guest write",
                                      "guest copy", "raw hypercall", "policy toggle"};

struct Trace {
    uint8_t op;
    uint8_t dom, vcpu;
    HypercallFrame f;
    long rc;
};

class Harness {
public:
    Harness(Input& in, const Options& opt, uint8_t config)
        : in_(in), opt_(opt), arena_(kMachineFrames),
          hv_(arena_.mem(), arena_.frames(), arena_.m2p(), plat_, config_of(config)),
          guest_(new uint8_t[kGuestBytes]()), scratch_(kMachineFrames)
    {
        plat_.attach(hv_);
        plat_.set_guest_memory(guest_.get(), kGuestBytes);
        nr_doms_ = (config & 4) ? 2 : 1;
        for (unsigned i = 0; i < nr_doms_; ++i) {
            DomainSpec spec;
            spec.id = kIds[i];
            spec.nr_vcpus = i == 0 && (config & 8) ? 2 : 1;
            spec.first_cpu = i * 2;
            spec.first = arena_.allocate(kDomFrames[i]);
            spec.nr_frames = kDomFrames[i];
            build_rc_ |= build_domain(hv_, doms_[i], spec, lays_[i]);
            if (config & (16 << i)) doms_[i].policy.allow(Perm::MapForeign);
        }
    }

    Outcome run();

private:
    static HvConfig config_of(uint8_t c)
    {
        static constexpr uint32_t kBudgets[4] = {4096, 1, 2, 7};
        HvConfig cfg;
        cfg.preempt_budget = kBudgets[c & 3];
        return cfg;
    }

    // --- guest memory -------------------------------------------------------------
    template <class T>
    T* alloc(size_t n)
    {
        const size_t bytes = n * sizeof(T), at = (bump_ + 15) & ~size_t(15);
        if (at + bytes > kGuestBytes) return nullptr;
        bump_ = at + bytes;
        return reinterpret_cast<T*>(guest_.get() + at);
    }
    uint64_t addr(const void* p) { return p ? uint64_t(reinterpret_cast<uintptr_t>(p)) : kBadPtr; }
    // A pointer argument: mostly `good`, sometimes null, unmapped, or the last
    // bytes of guest memory (a copy that runs off its end).
    uint64_t ptr_arg(const void* good)
    {
        switch (in_.u8() % 16) {
        case 0: return 0;
        case 1: return kBadPtr;
        case 2: return addr(guest_.get()) + kGuestBytes - 8;
        case 3: return in_.u64();
        default: return addr(good);
        }
    }

    // --- pickers --------------------------------------------------------------------
    unsigned me() const { return caller_; }
    unsigned other() const { return nr_doms_ == 2 ? 1 - caller_ : caller_; }
    const DomainLayout& lay(unsigned i) const { return lays_[i]; }

    Mfn remember(Mfn m)
    {
        recent_[recent_next_++ % 4] = m;
        return m;
    }
    Mfn frame()
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
    Mfn table_frame()
    {
        unsigned want = in_.u8(), seen = 0;
        Mfn last = lay(me()).l4;
        for (unsigned pass = 0; pass < 2; ++pass)
            for (uint64_t i = kFirstDomFrame; i < kMachineFrames; ++i)
                if (is_table_type(hv_.frame(Mfn{i}).type()) && seen++ == want) return Mfn{i};
        return last;
    }
    unsigned index()
    {
        static constexpr unsigned kSpecial[] = {0, 1, 2, 255, 256, 270, 271, 272, 510, 511};
        const uint16_t k = in_.u16();
        return k & 0x8000 ? kSpecial[k % 10] : k % kEntriesPerTable;
    }
    uint64_t flags()
    {
        static constexpr uint64_t kCommon[] = {
            kLinkFlags, P | US | A, P | RW | US | A | D, P, P | RW, P | A | NX, kLinkFlags | NX, 0,
            RW | US | A, P | PCD, P | PS, P | G, P | PWT, kLinkFlags | (1ull << 52), P | (5ull << 59)};
        const uint8_t k = in_.u8();
        if (k < 200) return kCommon[k % 15];
        static constexpr uint64_t kHigh[] = {0, NX, 1ull << 52, 1ull << 58, 1ull << 59, 0xfff0000000000000ull};
        return (in_.u16() & 0xfffull) | in_.pick(kHigh);
    }
    uint64_t flag_range_val()
    {
        static constexpr uint64_t kMasks[] = {RW, P, NX, AD, US, RW | NX, P | RW, 0xfff, G, PCD, 0xfffull | NX};
        static constexpr uint32_t kCounts[] = {0, 1, 2, 16, 511, 512, 513, 1023};
        const uint64_t mask = in_.pick(kMasks);
        const uint64_t bits = flags() & mask;
        const uint8_t c = in_.u8();
        const uint32_t count = c & 0x80 ? kCounts[c % 8] : in_.u16() % 1024;
        uint64_t v = abi::encode_flag_range(mask, bits, count);
        if (in_.u8() % 16 == 0) v |= 1ull << (58 + in_.u8() % 6);   // MBZ bits
        return v;
    }
    uint64_t val(unsigned cmd)
    {
        if (cmd == MMU_FLAG_RANGE_UPDATE && in_.u8() % 4) return flag_range_val();
        const DomainLayout& l = lay(me());
        switch (in_.u8() % 10) {
        case 0: return 0;
        case 1:
        case 2: return Pte::make(frame(), flags()).v;
        case 3:
        case 4: return Pte::make(remember(l.mfn(in_.u8() % l.nr_frames)), flags()).v;
        case 5: return Pte::make(frame(), kLinkFlags).v;
        case 6: return in_.u64();
        case 7: return flag_range_val();
        case 8: return Pte::make(lay(other()).mfn(in_.u8() % lay(other()).nr_frames), P | US | A).v;
        default: return Pte::make(frame(), P | US | A).v;
        }
    }
    uint64_t ptr(unsigned cmd)
    {
        const DomainLayout& l = lay(me());
        uint64_t a;
        switch (in_.u8() % 8) {
        case 0:
        case 1:
        case 2: a = maddr_of(frame()).v + index() * 8; break;
        case 3:
        case 4: a = l.pte_maddr(in_.u8() % l.nr_frames).v; break;
        case 5: a = lay(other()).pte_maddr(in_.u8() % lay(other()).nr_frames).v; break;
        case 6: a = maddr_of(l.mfn(in_.u8() % 3)).v + index() * 8; break;   // L4, L3, L2
        default: return in_.u64();
        }
        return (a & ~uint64_t(PVMMU_MMU_CMD_MASK)) | cmd;
    }
    uint64_t va()
    {
        const DomainLayout& l = lay(me());
        switch (in_.u8() % 8) {
        case 0:
        case 1:
        case 2:
        case 3: return l.va(in_.u8() % l.nr_frames).v + (in_.u8() % 8 == 0 ? in_.u16() % 4096 : 0);
        case 4: return in_.u64();
        case 5: return (1ull << 47) | in_.u32();   // not canonical
        case 6: return l.physmap.v + (uint64_t(in_.u32()) << 12);
        default: return 0xffff'8000'0000'0000ull + (uint64_t(in_.u16()) << 12);   // hypervisor half
        }
    }
    uint64_t vcpumask_arg()
    {
        static constexpr uint64_t kMasks[] = {1, 2, 3, 0, ~0ull, 1ull << 63, 4};
        uint64_t* m = alloc<uint64_t>(1);
        if (m) *m = in_.u8() % 8 == 0 ? in_.u64() : in_.pick(kMasks);
        return ptr_arg(m);
    }
    uint64_t foreigndom()
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
    uint64_t pdone_arg(uint32_t preset)
    {
        uint32_t* d = alloc<uint32_t>(1);
        if (d) *d = preset;
        return ptr_arg(d);
    }
    uint32_t count_arg(uint32_t n)
    {
        switch (in_.u8() % 12) {
        case 0: return 0;
        case 1: return n + in_.u8();
        case 2: return n | PVMMU_MMU_UPDATE_PREEMPTED;
        case 3: return in_.u32();
        default: return n;
        }
    }

    // --- hypercall arguments ------------------------------------------------------------
    HypercallFrame mmu_args(bool single)
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
    static constexpr unsigned kHotCmds[] = {MMU_NORMAL_PT_UPDATE, MMU_ATOMIC_PT_UPDATE, MMU_FLAG_RANGE_UPDATE,
                                            MMU_ATOMIC_PT_UPDATE, MMU_MACHPHYS_UPDATE};

    void ext_op(mmuext_op_t& o)
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
    HypercallFrame ext_args(bool single)
    {
        const uint32_t n = single ? 1 : 1 + in_.u8() % 8;
        mmuext_op_t* ops = alloc<mmuext_op_t>(n);
        for (uint32_t i = 0; ops && i < n; ++i) ext_op(ops[i]);
        if (single) return {__HYPERVISOR_mmuext_op, {addr(ops), 1, pdone_arg(0), DOMID_SELF, 0, 0}};
        const uint32_t count = count_arg(n);
        return {__HYPERVISOR_mmuext_op, {ptr_arg(ops), count, pdone_arg(in_.u8() % n), foreigndom(), 0, 0}};
    }
    HypercallFrame uva_args()
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
    HypercallFrame xv_args()
    {
        xen_feature_info_t* fi = alloc<xen_feature_info_t>(1);
        if (fi) *fi = xen_feature_info_t{unsigned(in_.u8() % 3), 0};
        const uint64_t cmd = in_.u8() % 8 == 0 ? in_.u64() : in_.u8() % 12;
        return {__HYPERVISOR_xen_version, {cmd, ptr_arg(fi), 0, 0, 0, 0}};
    }
    HypercallFrame raw_args()
    {
        HypercallFrame f{in_.u8() % 4 ? in_.u8() % 64 : in_.u64(), {}};
        uint64_t* area = alloc<uint64_t>(8);
        for (uint64_t& a : f.arg) a = in_.u8() % 2 ? in_.u64() : ptr_arg(area);
        return f;
    }
    HypercallFrame multicall_args(unsigned depth)
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

    // --- the guest's own memory writes ----------------------------------------------------
    // Frames the caller may write: its own, not in use as a page table (a guest
    // maps only those writable; the checker proves no table is mapped writable).
    bool guest_writable(Mfn m)
    {
        if (!hv_.mem().valid(m) || hv_.frame(m).owner.load() != kIds[me()]) return false;
        const uint64_t x = hv_.frame(m).type_info.load();
        return !(is_table_type(ti::type(x)) && ti::count(x));
    }
    void guest_write()
    {
        const Mfn m = frame();
        const unsigned n = 1 + in_.u8() % 4;
        for (unsigned i = 0; i < n; ++i) {
            const unsigned at = index();
            const uint64_t v = val(MMU_NORMAL_PT_UPDATE);
            if (guest_writable(m)) std::atomic_ref<uint64_t>(hv_.mem().table(m)[at]).store(v, std::memory_order_relaxed);
        }
    }
    void guest_copy()
    {
        const Mfn to = frame(), from = frame();
        const bool zero = in_.u8() & 1;
        if (!guest_writable(to) || (!zero && !hv_.mem().valid(from))) return;
        if (!zero && hv_.frame(from).owner.load() != kIds[me()]) return;   // it can read only its own
        uint64_t* t = hv_.mem().table(to);
        const uint64_t* f = zero ? nullptr : hv_.mem().table(from);
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const uint64_t v = f ? std::atomic_ref<const uint64_t>(f[i]).load(std::memory_order_relaxed) : 0;
            std::atomic_ref<uint64_t>(t[i]).store(v, std::memory_order_relaxed);
        }
    }

    // --- running and checking ---------------------------------------------------------------
    bool check(const char* when);
    void publish_roots();
    bool call(uint8_t op, HypercallFrame f, bool single);
    void fail(const std::string& what);
    std::string describe(size_t trace_index) const;

    Input& in_;
    const Options& opt_;
    FuzzPlatform plat_;
    sim::Arena arena_;
    Hypervisor hv_;
    Domain doms_[2];
    DomainLayout lays_[2];
    unsigned nr_doms_ = 1;
    int build_rc_ = 0;
    std::unique_ptr<uint8_t[]> guest_;
    size_t bump_ = 0;
    std::vector<FrameTally> scratch_;
    InvariantReport report_;
    StateSnapshot before_, after_;
    std::unique_ptr<AdWalker> ad_;
    unsigned caller_ = 0, vcpu_ = 0;
    Mfn recent_[4] = {};
    unsigned recent_next_ = 0;
    std::vector<Trace> trace_;
    Outcome out_;
};

void Harness::fail(const std::string& what)
{
    if (!out_.ok) return;
    out_.ok = false;
    std::ostringstream s;
    s << what << "\n  last operations (newest last):";
    const size_t from = trace_.size() > 12 ? trace_.size() - 12 : 0;
    for (size_t i = from; i < trace_.size(); ++i) s << "\n    " << describe(i);
    out_.failure = s.str();
}

std::string Harness::describe(size_t i) const
{
    const Trace& t = trace_[i];
    std::ostringstream s;
    s << "#" << i << " d" << kIds[t.dom] << "v" << unsigned(t.vcpu) << " " << kOpNames[t.op] << " op " << t.f.op
      << std::hex;
    for (uint64_t a : t.f.arg) s << " 0x" << a;
    s << std::dec << " -> " << t.rc;
    return s.str();
}

bool Harness::check(const char* when)
{
    if (check_invariants(hv_, TallySpan{scratch_.data(), scratch_.size()}, report_)) return true;
    std::ostringstream s;
    s << "invariant violated " << when << ": " << report_.total() << " violation(s)";
    for (unsigned i = 0; i < report_.kept(); ++i) {
        const Violation& v = report_[i];
        s << "\n    mfn " << v.frame.v;
        if (v.index != Violation::kNoIndex) s << " entry " << v.index;
        s << ": " << v.reason << " (expected 0x" << std::hex << v.expected << ", actual 0x" << v.actual << std::dec
          << ")";
    }
    fail(s.str());
    return false;
}

void Harness::publish_roots()
{
    if (!ad_) return;
    unsigned i = 0;
    for (unsigned d = 0; d < nr_doms_; ++d)
        for (unsigned k = 0; k < doms_[d].nr_vcpus; ++k) {
            const Vcpu& v = doms_[d].vcpus[k];
            ad_->publish(i++ % AdWalker::kRoots, v.has_table ? v.guest_table.v : ~0ull);
            ad_->publish(i++ % AdWalker::kRoots, v.has_user_table ? v.guest_table_user.v : ~0ull);
        }
}

// One hypercall, continued to completion, checked after every round. A refused
// single-request call is compared with the state before it.
bool Harness::call(uint8_t op, HypercallFrame f, bool single)
{
    Vcpu& v = doms_[caller_].vcpus[vcpu_];
    trace_.push_back(Trace{op, uint8_t(caller_), uint8_t(vcpu_), f, 0});
    if (single) before_.take(hv_, kFirstDomFrame, bool(ad_));
    ++out_.calls;
    long rc = 0;
    for (uint64_t round = 0;; ++round) {
        if (round == kMaxRounds) {
            fail("hypercall still preempted after 2^20 rounds (no progress)");
            return false;
        }
        const HcResult r = hypercall(hv_, v, f);
        ++out_.rounds;
        publish_roots();
        if (opt_.inject == Inject::BumpCountAfterFirstCall && out_.calls == 1 && !r.preempted)
            hv_.frame(lays_[0].l4).count.fetch_add(1);
        // Long continuations are checked on every round at first, then sparsely.
        if ((round < 64 || round % 64 == 0 || !r.preempted) && !check(r.preempted ? "between rounds" : "after the call"))
            return false;
        if (!r.preempted) {
            rc = r.rc;
            break;
        }
    }
    trace_.back().rc = rc;
    if (opt_.verbose) std::fprintf(stderr, "%s\n", describe(trace_.size() - 1).c_str());
    if (single && rc != 0) {
        ++out_.refused_checked;
        if (opt_.inject == Inject::WriteAfterRefusedRequest)
            hv_.mem().table(lays_[0].mfn(lays_[0].first_l1))[0] ^= NX;
        after_.take(hv_, kFirstDomFrame, bool(ad_));
        const std::string diff = differences(before_, after_, CompareRules{bool(ad_), opt_.strict});
        if (!diff.empty()) {
            fail("refused request (rc " + std::to_string(rc) + ") changed the state:" + diff);
            return false;
        }
    }
    return true;
}

Outcome Harness::run()
{
    if (build_rc_) {
        fail("domain builder failed: " + std::to_string(build_rc_));
        return out_;
    }
    recent_[0] = lays_[0].l4;
    recent_[1] = lays_[0].mfn(lays_[0].first_l1);
    recent_[2] = lays_[0].mfn(lays_[0].nr_pt_frames);
    recent_[3] = lays_[nr_doms_ - 1].l4;
    if (!check("after the domain builder")) return out_;
    if (opt_.concurrent_ad) {
        ad_ = std::make_unique<AdWalker>(hv_.mem());
        for (unsigned i = 0; i < AdWalker::kRoots; ++i) ad_->publish(i, ~0ull);
        publish_roots();
        ad_->start();
    }
    while (!in_.empty() && out_.ops < kMaxOps && out_.ok) {
        const uint8_t k = in_.u8();
        caller_ = (k & 0x80) && nr_doms_ == 2 ? 1 : 0;
        vcpu_ = (k & 0x40) ? doms_[caller_].nr_vcpus - 1 : 0;
        const uint8_t op = uint8_t((k & 0x3f) % kNrOps);
        ++out_.ops;
        bump_ = 0;
        switch (op) {
        case MmuOne: call(op, mmu_args(true), true); break;
        case MmuBatch: call(op, mmu_args(false), false); break;
        case ExtOne: call(op, ext_args(true), true); break;
        case ExtBatch: call(op, ext_args(false), false); break;
        case UpdateVa: call(op, uva_args(), true); break;
        case Multicall: call(op, multicall_args(0), false); break;
        case XenVersion: call(op, xv_args(), true); break;
        case GuestWrite: guest_write(); break;
        case GuestCopy: guest_copy(); break;
        case RawCall: call(op, raw_args(), false); break;
        default: {
            const Perm p = Perm(in_.u8() % unsigned(Perm::MapForeign));   // never the privilege itself
            Policy& pol = doms_[caller_].policy;
            if (pol.allows(p)) pol.deny(p);
            else pol.allow(p);
        }
        }
    }
    if (ad_) {
        ad_->stop();
        out_.ad_bits = ad_->bits_set();
        if (out_.ok) check("at the end, hardware stopped");
    }
    // Nothing ever writes the hypervisor's and the I/O frames.
    const uint64_t* low = hv_.mem().table(Mfn{0});
    for (uint64_t w = 0; w < kFirstDomFrame * kEntriesPerTable && out_.ok; ++w)
        if (low[w]) fail("hypervisor or I/O frame memory written: mfn " + std::to_string(w / kEntriesPerTable));
    return out_;
}

} // namespace

Outcome run_input(const uint8_t* data, size_t size, const Options& opt)
{
    Input in(data, size);
    const uint8_t config = in.u8();
    Harness h(in, opt, config);
    return h.run();
}

} // namespace pvmmu::fuzz
