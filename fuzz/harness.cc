// The hypercall fuzzer's harness; see harness.h. It builds the machine, runs
// each operation the decoder (decoder.h) draws from the input, and checks: the
// invariants after every hypercall round, a refused request against a snapshot,
// the hypervisor's frames at the end.
#include "harness.h"

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sstream>
#include <vector>

#include <pvmmu/abi.h>

#include "ad_walker.h"
#include "core/event_invariants.h"
#include "core/events.h"
#include "core/grant_table.h"
#include "core/invariants.h"
#include "decoder.h"
#include "fuzz_platform.h"
#include "machine_memory.h"
#include "state.h"

namespace pvmmu::fuzz {
namespace {

using namespace pte_bit;

constexpr uint64_t kMaxRounds = 1 << 20;   // a call still going after this many livelocks

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

// What outlives one input (thread-local: one per fuzzing thread): the machine's
// memory, guest memory and the checkers' scratch, allocated once.
struct Workspace {
    MachineMemoryPool machine{kMachineFrames};
    std::unique_ptr<uint8_t[]> guest{new uint8_t[kGuestBytes]};
    std::vector<FrameTally> scratch = std::vector<FrameTally>(kMachineFrames);
    StateSnapshot before, after;
    // Each domain's shared_info (host memory the guests cannot write: only
    // the core sets its bits), and the other domain's copy before a call.
    std::unique_ptr<shared_info_t[]> shared{new shared_info_t[2]};
    std::unique_ptr<shared_info_t> other_before{new shared_info_t};
    // Each domain's grant table: one frame of entries (its last frame) and a
    // maptrack of a few handles, so that exhausting it is reachable.
    static constexpr uint32_t kHandles = 8;
    std::vector<ActiveGrant> active[2] = {std::vector<ActiveGrant>(gnt::kEntriesPerFrame),
                                          std::vector<ActiveGrant>(gnt::kEntriesPerFrame)};
    std::vector<MapTrack> maptrack[2] = {std::vector<MapTrack>(kHandles), std::vector<MapTrack>(kHandles)};
    Mfn table_frame[2] = {};

    Workspace& reset()
    {
        machine.reset();
        for (unsigned i = 0; i < 2; ++i) {
            std::fill(active[i].begin(), active[i].end(), ActiveGrant{});
            std::fill(maptrack[i].begin(), maptrack[i].end(), MapTrack{});
        }
        std::memset(guest.get(), 0, kGuestBytes);
        std::memset(shared.get(), 0, 2 * sizeof(shared_info_t));
        return *this;
    }
};

class Harness {
public:
    Harness(Input& in, const Options& opt, uint8_t config, Workspace& ws)
        : in_(in), opt_(opt), ws_(ws),
          hv_(ws.machine.mem(), ws.machine.frames(), ws.machine.m2p(), plat_, config_of(config)),
          guest_(ws.guest.get())
    {
        plat_.attach(hv_);
        plat_.set_guest_memory(guest_, kGuestBytes);
        nr_doms_ = (config & 4) ? 2 : 1;
        for (unsigned i = 0; i < nr_doms_; ++i) {
            DomainSpec spec;
            spec.id = kIds[i];
            spec.nr_vcpus = i == 0 && (config & 8) ? 2 : 1;
            spec.first_cpu = i * 2;
            spec.first = ws.machine.allocate(kDomFrames[i]);
            spec.nr_frames = kDomFrames[i];
            build_rc_ |= build_domain(hv_, doms_[i], spec, lays_[i]);
            if (config & (16 << i)) doms_[i].policy.allow(Perm::MapForeign);
            events_[i] = std::make_unique<DomainEvents>(&ws.shared[i]);
            doms_[i].events = events_[i].get();
            ws.table_frame[i] = lays_[i].mfn(kDomFrames[i] - 1);
            grants_[i] = std::make_unique<GrantTable>(
                kIds[i], GrantLimits{1, 1},
                GrantStorage{&ws.table_frame[i], 1, ws.active[i].data(), ws.maptrack[i].data(), Workspace::kHandles});
            doms_[i].grants = grants_[i].get();
            if (!build_rc_ && grants_[i]->grow(hv_, 1) != GNTST_okay) build_rc_ = -XEN_EINVAL;
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

    bool check(const char* when);
    bool check_events(unsigned other);
    FifoWords fifo_words(unsigned i) const;
    unsigned fifo_frames(unsigned i, Mfn* out) const;
    void save_fifo_frames(unsigned i);
    uint64_t grant_status_addr(const HypercallFrame& f) const;
    void publish_roots();
    bool call(uint8_t op, HypercallFrame f, bool single);
    void fail(const std::string& what);
    std::string describe(size_t trace_index) const;
    void verbose(const Trace& t);

    Input& in_;
    const Options& opt_;
    Workspace& ws_;
    FuzzPlatform plat_;
    Hypervisor hv_;
    Domain doms_[2];
    std::unique_ptr<DomainEvents> events_[2];
    std::unique_ptr<GrantTable> grants_[2];
    DomainLayout lays_[2];
    unsigned nr_doms_ = 1;
    int build_rc_ = 0;
    uint8_t* guest_;
    InvariantReport report_;
    std::unique_ptr<AdWalker> ad_;
    const Decoder* dec_ = nullptr;
    // The other domain's FIFO frames before a call, to show the call left them.
    Mfn fifo_saved_[kMaxCpus + kFifoMaxPages];
    std::vector<uint8_t> fifo_before_;
    unsigned nr_fifo_saved_ = 0;
    unsigned caller_ = 0, vcpu_ = 0;   // the operation's domain (index) and vCPU
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

// With Options::verbose: the call and its first requests, read back from guest
// memory (still there: the bump allocator is reset per operation only).
void Harness::verbose(const Trace& t)
{
    std::fprintf(stderr, "%s\n", describe(trace_.size() - 1).c_str());
    const uint64_t base = uint64_t(reinterpret_cast<uintptr_t>(guest_));
    if (t.f.arg[0] < base || t.f.arg[0] >= base + kGuestBytes - 64) return;
    const uint64_t* w = reinterpret_cast<const uint64_t*>(uintptr_t(t.f.arg[0]));
    if (t.f.op == __HYPERVISOR_mmu_update)
        std::fprintf(stderr, "      req0 ptr 0x%llx val 0x%llx\n", (unsigned long long)w[0], (unsigned long long)w[1]);
    else if (t.f.op == __HYPERVISOR_mmuext_op)
        std::fprintf(stderr, "      op0 cmd %u arg1 0x%llx\n", unsigned(w[0]), (unsigned long long)w[1]);
}

bool Harness::check(const char* when)
{
    if (check_invariants(hv_, TallySpan{ws_.scratch.data(), ws_.scratch.size()}, report_)) return true;
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

// Domain i's FIFO control blocks' and event array pages' frames (some may
// repeat); their number.
unsigned Harness::fifo_frames(unsigned i, Mfn* out) const
{
    const DomainEvents& e = *doms_[i].events;
    unsigned n = 0;
    if (!evtchn_fifo_on(e)) return 0;
    for (unsigned k = 0; k < doms_[i].nr_vcpus; ++k)
        if (e.fifo.vcpu[k].block) out[n++] = e.fifo.vcpu[k].block_mfn;
    const unsigned pages = e.fifo.nr_pages.load();
    for (unsigned k = 0; k < pages; ++k) out[n++] = e.fifo.page_mfn[k];
    return n;
}

// The FIFO queue rules hold only for a guest that kept the protocol: each
// frame serving one purpose, prepared for it (Decoder::fifo_prepared) and
// not written by the guest since.
FifoWords Harness::fifo_words(unsigned i) const
{
    Mfn f[kMaxCpus + kFifoMaxPages];
    const unsigned n = fifo_frames(i, f);
    const unsigned blocks = n - doms_[i].events->fifo.nr_pages.load();
    for (unsigned k = 0; k < n; ++k) {
        const auto want = k < blocks ? Decoder::Prepared::Block : Decoder::Prepared::Array;
        if (!dec_ || dec_->fifo_prepared(f[k]) != want) return FifoWords::AnyWords;
        for (unsigned j = 0; j < k; ++j)
            if (f[j] == f[k]) return FifoWords::AnyWords;
    }
    return FifoWords::Protocol;
}

void Harness::save_fifo_frames(unsigned i)
{
    Mfn f[kMaxCpus + kFifoMaxPages];
    const unsigned n = fifo_frames(i, f);
    nr_fifo_saved_ = 0;
    for (unsigned k = 0; k < n; ++k) {   // each frame once
        bool seen = false;
        for (unsigned j = 0; j < nr_fifo_saved_ && !seen; ++j) seen = fifo_saved_[j] == f[k];
        if (!seen) fifo_saved_[nr_fifo_saved_++] = f[k];
    }
    fifo_before_.resize(size_t(nr_fifo_saved_) * kPageSize);
    for (unsigned k = 0; k < nr_fifo_saved_; ++k)
        std::memcpy(&fifo_before_[k * kPageSize], hv_.mem().frame(fifo_saved_[k]), kPageSize);
}

// Every domain's event state is consistent and no event was lost (no guest
// consumes here, so "pending and unmasked" must always be selected, or
// linked); the other domain's shared_info and FIFO frames are as they were
// before the call: no event or timer for another domain.
bool Harness::check_events(unsigned other)
{
    InvariantReport r;
    for (unsigned i = 0; i < nr_doms_; ++i) check_event_invariants(doms_[i], r, fifo_words(i));
    check_interdomain_channels(hv_, r);
    if (!r.ok()) {
        fail(std::string("event invariant violated: ") + r[0].reason + " (port or vCPU " + std::to_string(r[0].index) +
             ")");
        return false;
    }
    // Unless the other domain opened a channel to the caller: then a send
    // raises its end (an interdomain port, or one left unbound for the
    // caller by a close in the same multicall).
    bool channel = false;
    for (unsigned p = 0; p < events_[other]->valid && !channel; ++p) {
        const Port& port = events_[other]->ports[p];
        channel = (port.state == PortState::Interdomain || port.state == PortState::Unbound) &&
                  !port.platform_end && port.remote_dom == kIds[caller_];
    }
    if (other != caller_ && !channel &&
        std::memcmp(ws_.other_before.get(), &ws_.shared[other], sizeof(shared_info_t))) {
        fail("a call changed another domain's shared_info");
        return false;
    }
    for (unsigned k = 0; other != caller_ && k < nr_fifo_saved_; ++k)
        if (std::memcmp(&fifo_before_[k * kPageSize], hv_.mem().frame(fifo_saved_[k]), kPageSize)) {
            fail("a call changed another domain's FIFO event frames");
            return false;
        }
    return true;
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

// Where a grant_table_op of one map, unmap or copy request reports its
// GNTST_* status (0: not such a call, or not in guest memory).
uint64_t Harness::grant_status_addr(const HypercallFrame& f) const
{
    if (f.op != __HYPERVISOR_grant_table_op || uint32_t(f.arg[2]) != 1) return 0;
    uint64_t at;
    switch (f.arg[0]) {
    case GNTTABOP_map_grant_ref: at = f.arg[1] + offsetof(gnttab_map_grant_ref_t, status); break;
    case GNTTABOP_unmap_grant_ref: at = f.arg[1] + offsetof(gnttab_unmap_grant_ref_t, status); break;
    case GNTTABOP_unmap_and_replace: at = f.arg[1] + offsetof(gnttab_unmap_and_replace_t, status); break;
    case GNTTABOP_copy: at = f.arg[1] + offsetof(gnttab_copy_t, status); break;
    default: return 0;
    }
    return plat_.inside(at, sizeof(int16_t)) ? at : 0;
}

// One hypercall, continued to completion, checked after every round. A refused
// single-request call is compared with the state before it, and so is a
// grant_table_op of one request refused by its status.
bool Harness::call(uint8_t op, HypercallFrame f, bool single)
{
    Vcpu& v = doms_[caller_].vcpus[vcpu_];
    trace_.push_back(Trace{op, uint8_t(caller_), uint8_t(vcpu_), f, 0});
    const uint64_t status_at = grant_status_addr(f);
    if (single || status_at) ws_.before.take(hv_, kFirstDomFrame, bool(ad_));
    const unsigned other = nr_doms_ == 2 ? 1 - caller_ : caller_;
    std::memcpy(ws_.other_before.get(), &ws_.shared[other], sizeof(shared_info_t));
    if (other != caller_) save_fifo_frames(other);
    else nr_fifo_saved_ = 0;
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
        if (opt_.inject == Inject::BumpCountAfterFirstCall && out_.calls == 1 && !r.preempted())
            hv_.frame(lays_[0].l4).count.fetch_add(1);
        // Long continuations are checked on every round at first, then sparsely.
        if ((round < 64 || round % 64 == 0 || !r.preempted()) && !check(r.preempted() ? "between rounds" : "after the call"))
            return false;
        if (!r.preempted()) {
            rc = r.rc;
            break;
        }
    }
    trace_.back().rc = rc;
    if (opt_.verbose) verbose(trace_.back());
    if (opt_.inject == Inject::DropSelectorsAfterEachCall)
        for (unsigned i = 0; i < nr_doms_; ++i) {
            for (vcpu_info_t& vi : ws_.shared[i].vcpu_info) vi.evtchn_pending_sel = 0;
            if (fifo_words(i) == FifoWords::Protocol)
                for (FifoVcpu& fv : events_[i]->fifo.vcpu)
                    if (fv.block) fv.block->ready = 0;
        }
    if (opt_.inject == Inject::SignalOtherDomain && other != caller_) ws_.shared[other].evtchn_mask[63] ^= 1;
    if (opt_.inject == Inject::SignalOtherDomainFifo && nr_fifo_saved_)
        static_cast<uint8_t*>(hv_.mem().frame(fifo_saved_[0]))[kPageSize - 1] ^= 1;
    if (!check_events(other)) return false;
    // A batch whose *pdone cannot be written returns -EFAULT after its requests
    // ran (docs/abi.md): a refusal only when pdone is NULL or writable.
    const bool batch = f.op == __HYPERVISOR_mmu_update || f.op == __HYPERVISOR_mmuext_op;
    const bool reported = !batch || f.arg[2] == 0 || plat_.inside(f.arg[2], sizeof(uint32_t));
    const int16_t grant_status = status_at ? *reinterpret_cast<const int16_t*>(uintptr_t(status_at)) : 0;
    const bool grant_refused = status_at && rc == 0 && grant_status < 0;
    if (status_at && rc == 0 && grant_status == GNTST_okay && f.arg[0] == GNTTABOP_map_grant_ref) ++out_.grants_mapped;
    if (grant_refused) ++out_.grants_refused;
    if (((single && rc != 0) || grant_refused) && reported) {
        ++out_.refused_checked;
        if (opt_.inject == Inject::WriteAfterRefusedRequest)
            hv_.mem().table(lays_[0].mfn(lays_[0].first_l1))[0] ^= NX;
        ws_.after.take(hv_, kFirstDomFrame, bool(ad_));
        const std::string diff = differences(ws_.before, ws_.after, CompareRules{bool(ad_), opt_.strict});
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
    Decoder dec(in_, hv_, lays_, nr_doms_, guest_);
    dec_ = &dec;
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
        dec.begin_op(caller_);
        switch (op) {
        case MmuOne: call(op, dec.mmu_args(true), true); break;
        case MmuBatch: call(op, dec.mmu_args(false), false); break;
        case ExtOne: call(op, dec.ext_args(true), true); break;
        case ExtBatch: call(op, dec.ext_args(false), false); break;
        case UpdateVa: call(op, dec.uva_args(), true); break;
        case Multicall: call(op, dec.multicall_args(0), false); break;
        case XenVersion: call(op, dec.xv_args(), true); break;
        case GuestWrite: dec.guest_write(); break;
        case GuestCopy: dec.guest_copy(); break;
        case RawCall: call(op, dec.raw_args(), false); break;
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
    static const uint8_t kZero[kPageSize] = {};
    for (uint64_t m = 0; m < kFirstDomFrame && out_.ok; ++m)
        if (std::memcmp(hv_.mem().frame(Mfn{m}), kZero, kPageSize))
            fail("hypervisor or I/O frame memory written: mfn " + std::to_string(m));
    return out_;
}

} // namespace

Outcome run_input(const uint8_t* data, size_t size, const Options& opt)
{
    static thread_local Workspace ws;
    Input in(data, size);
    const uint8_t config = in.u8();
    Harness h(in, opt, config, ws.reset());
    return h.run();
}

} // namespace pvmmu::fuzz
