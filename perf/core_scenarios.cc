// Scenario table and request arrays of the core's per-PTE cost; see core_scenarios.h.
#include "core_scenarios.h"

#include <cstring>

namespace pvmmu::perf {

namespace {

// `flip` is the PTE bit step 0 changes and step 1 changes back. `multicall`:
// each request is an mmu_update of its own, the 512 batched in one multicall
// (Linux's xen_mc_* way), so the row prices a multicall entry.
struct Def {
    std::string_view name;
    unsigned cmd;
    uint64_t flip;
    bool measured[CoreRig::kSteps];
    bool multicall = false;
};

// The builder maps data pages RW and executable: step 0 sets NX or drops RW.
constexpr Def kDefs[] = {
    {"flagrange-flagonly", MMU_FLAG_RANGE_UPDATE, pte_bit::NX, {true, true}},
    {"atomic-flagonly", MMU_ATOMIC_PT_UPDATE, pte_bit::NX, {true, true}},
    {"atomic-rw-raise", MMU_ATOMIC_PT_UPDATE, pte_bit::RW, {false, true}},
    {"atomic-rw-lower", MMU_ATOMIC_PT_UPDATE, pte_bit::RW, {true, false}},
    {"flagrange-rw-raise", MMU_FLAG_RANGE_UPDATE, pte_bit::RW, {false, true}},
    {"flagrange-rw-lower", MMU_FLAG_RANGE_UPDATE, pte_bit::RW, {true, false}},
    {"normal-flagonly", MMU_NORMAL_PT_UPDATE, pte_bit::NX, {true, true}},
    {"multicall-normal-flagonly", MMU_NORMAL_PT_UPDATE, pte_bit::NX, {true, true}, true},
    {"multicall-normal-rw-raise", MMU_NORMAL_PT_UPDATE, pte_bit::RW, {false, true}, true},
};

// The fork scenarios (core_scenarios.h). `cmd` is the measured requests'.
//   Cow          the child's entry i, read-only on data frame 512 + i, made
//                writable on frame 1024 + i: a copy-on-write fault's one-request
//                call (Linux's __xen_set_pte outside lazy-MMU mode); back in one call;
//   FlagOnly     the child's entry i, NX toggled, one request per call, both ways;
//   ChildBatch   the empty L1's entries filled read-only, two or sixteen requests
//                a call, as fork's lazy-MMU batches copy the parent's PTEs (Linux
//                6.1's fork of 1,024 pages: about 12 a call besides its
//                one-request copy-on-write calls, docs/results.md §13's counts);
//                cleared in one call;
//   PlainBatch   the same into a frame not yet pinned (gpfn 2044, mapped writable):
//                a new mm's table before its first switch, which Linux fills by
//                cmd 0 too (mmu_update.cc plain_update); cleared in one call;
//   WriteProtect the parent's entry i, RW cleared by emulate_l1_write (fork's
//                `lock andb` on each parent PTE, docs/abi.md §12.5); restored in one call;
//   Unpin, Pin   the child's L1 (512 present read-only entries) unpinned, pinned.
enum class ForkKind : uint8_t { Cow, FlagOnly, ChildBatch, PlainBatch, WriteProtect, Unpin, Pin };

struct ForkDef {
    std::string_view name;
    ForkKind kind;
    unsigned cmd;
    bool measured[CoreRig::kSteps];
    unsigned per_call = 2;   // ChildBatch: requests per call
};

constexpr ForkDef kForkDefs[] = {
    {"one-normal-cow", ForkKind::Cow, MMU_NORMAL_PT_UPDATE, {true, false}},
    {"one-atomic-cow", ForkKind::Cow, MMU_ATOMIC_PT_UPDATE, {true, false}},
    {"one-normal-flagonly", ForkKind::FlagOnly, MMU_NORMAL_PT_UPDATE, {true, true}},
    {"batch2-normal-child", ForkKind::ChildBatch, MMU_NORMAL_PT_UPDATE, {true, false}},
    {"batch16-normal-child", ForkKind::ChildBatch, MMU_NORMAL_PT_UPDATE, {true, false}, 16},
    {"batch16-plain-child", ForkKind::PlainBatch, MMU_NORMAL_PT_UPDATE, {true, false}, 16},
    {"ptwr-rw-lower", ForkKind::WriteProtect, 0, {true, false}},
    {"unpin-l1", ForkKind::Unpin, 0, {true, false}},
    {"pin-l1", ForkKind::Pin, 0, {false, true}},
};

} // namespace

std::vector<std::string_view> CoreRig::names()
{
    std::vector<std::string_view> out;
    for (const Def& d : kDefs) out.push_back(d.name);
    for (const ForkDef& d : kForkDefs) out.push_back(d.name);
    return out;
}

CoreRig::CoreRig()
{
    d_ = m_.create_domain(1, 2048, 1, lay_);
    // gpfns 512..1023: all data frames (the page tables are gpfns 0..6).
    l1_ = lay_.mfn(4);
    const uint64_t* t = m_.table(l1_);
    initial_.assign(t, t + kEntriesPerTable);
}

void CoreRig::whole(Step& st)
{
    Call c;
    if (!st.entries.empty()) {
        c.op = __HYPERVISOR_multicall;
        c.arg[0] = reinterpret_cast<uint64_t>(st.entries.data());
        c.arg[1] = st.entries.size();
    } else if (!st.ops.empty()) {
        c.op = __HYPERVISOR_mmuext_op;
        c.arg[0] = reinterpret_cast<uint64_t>(st.ops.data());
        c.arg[1] = st.ops.size();
    } else {
        c.op = __HYPERVISOR_mmu_update;
        c.arg[0] = reinterpret_cast<uint64_t>(st.reqs.data());
        c.arg[1] = st.reqs.size();
    }
    st.calls.push_back(c);
}

void CoreRig::split(Step& st, unsigned per)
{
    for (size_t i = 0; i < st.reqs.size(); i += per) {
        Call c;
        c.op = __HYPERVISOR_mmu_update;
        c.arg[0] = reinterpret_cast<uint64_t>(&st.reqs[i]);
        c.arg[1] = per;
        st.calls.push_back(c);
    }
}

bool CoreRig::fork_setup()
{
    // The three tables are data frames of the last L1's range (gpfns 2045..2047),
    // made read-only in the physmap and pinned as L1s, as Linux pins a new table.
    const uint64_t gpfn[3] = {2045, 2046, 2047};
    Mfn* const mfn[3] = {&empty_, &child_, &parent_};
    mmu_update_t ro[3];
    for (unsigned k = 0; k < 3; ++k) {
        *mfn[k] = lay_.mfn(gpfn[k]);
        const uint64_t e = m_.table(lay_.mfn(lay_.l1_gpfn(gpfn[k])))[gpfn[k] % kEntriesPerTable];
        ro[k] = {lay_.pte_maddr(gpfn[k]).v | MMU_NORMAL_PT_UPDATE, e & ~pte_bit::RW};
    }
    if (m_.call(d_->vcpus[0], __HYPERVISOR_mmu_update, reinterpret_cast<uint64_t>(ro), 3,
                reinterpret_cast<uint64_t>(&done_), DOMID_SELF) != 0)
        return false;
    for (unsigned i = 0; i < kEntriesPerTable; ++i) {
        m_.table(parent_)[i] = initial_[i];
        m_.table(child_)[i] = initial_[i] & ~pte_bit::RW;
        m_.table(empty_)[i] = 0;
    }
    mmuext_op_t pins[3];
    for (unsigned k = 0; k < 3; ++k) {
        pins[k] = {};
        pins[k].cmd = MMUEXT_PIN_L1_TABLE;
        pins[k].arg1.mfn = mfn[k]->v;
    }
    if (m_.call(d_->vcpus[0], __HYPERVISOR_mmuext_op, reinterpret_cast<uint64_t>(pins), 3,
                reinterpret_cast<uint64_t>(&done_), DOMID_SELF) != 0)
        return false;
    for (Mfn t : {l1_, parent_, child_, empty_, lay_.mfn(2044)})
        tables_at_start_.insert(tables_at_start_.end(), m_.table(t), m_.table(t) + kEntriesPerTable);
    return true;
}

std::unique_ptr<CoreRig> CoreRig::make(std::string_view scenario)
{
    for (const Def& def : kDefs) {
        if (def.name != scenario) continue;
        std::unique_ptr<CoreRig> r(new CoreRig());
        if (!r->d_) return nullptr;
        const uint64_t base = maddr_of(r->l1_).v;
        for (unsigned s = 0; s < kSteps; ++s) {
            Step& st = r->steps_[s];
            st.measured = def.measured[s];
            if (def.cmd == MMU_FLAG_RANGE_UPDATE) {
                const uint64_t bits = (s == 0 ? ~r->initial_[0] : r->initial_[0]) & def.flip;
                st.reqs.push_back({base | def.cmd, abi::encode_flag_range(def.flip, bits, kEntriesPerTable)});
                whole(st);
                continue;
            }
            for (unsigned i = 0; i < kEntriesPerTable; ++i) {
                const uint64_t v = s == 0 ? r->initial_[i] ^ def.flip : r->initial_[i];
                st.reqs.push_back({(base + i * sizeof(uint64_t)) | def.cmd, v});
            }
            if (def.multicall) {
                st.entries.resize(st.reqs.size());
                for (size_t i = 0; i < st.reqs.size(); ++i)
                    st.entries[i] = {__HYPERVISOR_mmu_update, 0,
                                     {reinterpret_cast<uint64_t>(&st.reqs[i]), 1, 0, DOMID_SELF, 0, 0}};
            }
            whole(st);
        }
        return r;
    }
    for (const ForkDef& def : kForkDefs) {
        if (def.name != scenario) continue;
        std::unique_ptr<CoreRig> r(new CoreRig());
        if (!r->d_ || !r->fork_setup()) return nullptr;
        Step& a = r->steps_[0];
        Step& b = r->steps_[1];
        const uint64_t child = maddr_of(r->child_).v, empty = maddr_of(r->empty_).v;
        const uint64_t parent = maddr_of(r->parent_).v, plain = maddr_of(r->lay_.mfn(2044)).v;
        auto ro = [&](unsigned i) { return r->initial_[i] & ~pte_bit::RW; };
        // The copy-on-write target: data frame 1024 + i, writable, mapped writable in the physmap.
        auto fresh = [&](unsigned i) {
            return (r->initial_[i] & ~pte_bit::ADDR) | maddr_of(r->lay_.mfn(1024 + i)).v;
        };
        for (unsigned i = 0; i < kEntriesPerTable; ++i) {
            const uint64_t at = i * sizeof(uint64_t);
            switch (def.kind) {
            case ForkKind::Cow:
                a.reqs.push_back({(child + at) | def.cmd, fresh(i)});
                b.reqs.push_back({(child + at) | MMU_NORMAL_PT_UPDATE, ro(i)});
                break;
            case ForkKind::FlagOnly:
                a.reqs.push_back({(child + at) | def.cmd, ro(i) ^ pte_bit::NX});
                b.reqs.push_back({(child + at) | def.cmd, ro(i)});
                break;
            case ForkKind::ChildBatch:
                a.reqs.push_back({(empty + at) | def.cmd, ro(i)});
                b.reqs.push_back({(empty + at) | MMU_NORMAL_PT_UPDATE, 0});
                break;
            case ForkKind::PlainBatch:
                a.reqs.push_back({(plain + at) | def.cmd, ro(i)});
                b.reqs.push_back({(plain + at) | MMU_NORMAL_PT_UPDATE, 0});
                break;
            case ForkKind::WriteProtect: {
                Call c;
                c.ptwr = true;
                c.l1 = r->parent_;
                c.index = i;
                c.write = {PtWriteOp::And, ~pte_bit::RW};
                a.calls.push_back(c);
                b.reqs.push_back({(parent + at) | MMU_NORMAL_PT_UPDATE, r->initial_[i]});
                break;
            }
            case ForkKind::Unpin:
            case ForkKind::Pin:
                break;
            }
        }
        a.measured = def.measured[0];
        b.measured = def.measured[1];
        switch (def.kind) {
        case ForkKind::Cow:
        case ForkKind::FlagOnly:
            split(a, 1);
            if (def.kind == ForkKind::FlagOnly) split(b, 1);
            else whole(b);
            break;
        case ForkKind::ChildBatch:
        case ForkKind::PlainBatch:
            split(a, def.per_call);
            whole(b);
            break;
        case ForkKind::WriteProtect:
            whole(b);
            break;
        case ForkKind::Unpin:
        case ForkKind::Pin: {
            mmuext_op_t op{};
            op.arg1.mfn = r->child_.v;
            op.cmd = MMUEXT_UNPIN_TABLE;
            a.ops.push_back(op);
            op.cmd = MMUEXT_PIN_L1_TABLE;
            b.ops.push_back(op);
            whole(a);
            whole(b);
            break;
        }
        }
        return r;
    }
    return nullptr;
}

unsigned CoreRig::measured_ptes_per_round() const
{
    unsigned n = 0;
    for (const Step& s : steps_) n += s.measured ? s.units : 0;
    return n;
}

bool CoreRig::at_start()
{
    if (std::memcmp(m_.table(l1_), initial_.data(), kPageSize) != 0) return false;
    if (tables_at_start_.empty()) return true;
    unsigned k = 0;
    for (Mfn t : {l1_, parent_, child_, empty_, lay_.mfn(2044)})
        if (std::memcmp(m_.table(t), &tables_at_start_[kEntriesPerTable * k++], kPageSize) != 0) return false;
    return true;
}

} // namespace pvmmu::perf
